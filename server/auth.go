package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
)

// authCookie is the cookie /login sets: a hash of the API key (not the key itself), so that the
// browser's pages and websockets authenticate without JavaScript holding the key.
const authCookie = "kvlab_auth"

// cookieValue is the login cookie's value for a key.
func cookieValue(key string) string {
	h := sha256.Sum256([]byte("kvlab login cookie\x00" + key))
	return hex.EncodeToString(h[:])
}

// public reports whether a path is served without the API key.
func public(path string) bool {
	return path == "/healthz" || path == "/login" || strings.HasPrefix(path, assetPrefix)
}

// authorized reports whether a request carries the API key: as a bearer token, or the login
// cookie.
func (s *Server) authorized(r *http.Request) bool {
	key := s.cfg.APIKey
	if key == "" {
		return true
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(key)) == 1 {
			return true
		}
	}
	if c, err := r.Cookie(authCookie); err == nil {
		return subtle.ConstantTimeCompare([]byte(c.Value), []byte(cookieValue(key))) == 1
	}
	return false
}

// authenticate requires the API key, when one is set, on every non-public route: APIs get a 401
// JSON error, pages a redirect to the login form.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.cfg.APIKey == "" || public(r.URL.Path) || s.authorized(r) {
			return next(c)
		}
		if isAPIPath(r.URL.Path) || r.Method != http.MethodGet {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="kvlab"`)
			msg := "missing API key: send Authorization: Bearer KEY"
			if r.Header.Get("Authorization") != "" {
				msg = "wrong API key"
			}
			return &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Code: "invalid_api_key", Message: msg}
		}
		return c.Redirect(http.StatusFound, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
	}
}

// safeNext is a local path to return to after login ("/" for anything else).
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") {
		return "/"
	}
	return next
}

// loginPage shows the API-key form.
func (s *Server) loginPage(c echo.Context) error {
	return s.renderPage(c, http.StatusOK, web.LoginPage(s.pageData("login"), safeNext(c.QueryParam("next")), ""))
}

// login checks the key from the form and sets the login cookie.
func (s *Server) login(c echo.Context) error {
	c.Request().Body = http.MaxBytesReader(c.Response(), c.Request().Body, 16<<10)
	next := safeNext(c.FormValue("next"))
	if s.cfg.APIKey == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if subtle.ConstantTimeCompare([]byte(c.FormValue("key")), []byte(s.cfg.APIKey)) != 1 {
		return s.renderPage(c, http.StatusUnauthorized, web.LoginPage(s.pageData("login"), next, "That is not the server's API key."))
	}
	c.SetCookie(&http.Cookie{Name: authCookie, Value: cookieValue(s.cfg.APIKey), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Scheme() == "https"})
	return c.Redirect(http.StatusSeeOther, next)
}
