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
// cookie (cookie then true).
func (s *Server) authorized(r *http.Request) (ok, cookie bool) {
	key := s.cfg.APIKey
	if key == "" {
		return true, false
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		if subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(key)) == 1 {
			return true, false
		}
	}
	if c, err := r.Cookie(authCookie); err == nil {
		ok := subtle.ConstantTimeCompare([]byte(c.Value), []byte(cookieValue(key))) == 1
		return ok, ok
	}
	return false, false
}

// authenticate requires the API key, when one is set, on every non-public route: APIs get a 401
// JSON error, pages a redirect to the login form. A state-changing request authenticated by the
// login cookie must also carry the CSRF token (the pages copy it from the kvlab_csrf cookie into
// the X-CSRF-Token header); websockets are covered by the Origin check instead.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if s.cfg.APIKey == "" || public(r.URL.Path) {
			return next(c)
		}
		ok, cookie := s.authorized(r)
		if ok {
			if cookie && stateChanging(r) && !isUpgrade(r) &&
				subtle.ConstantTimeCompare([]byte(r.Header.Get(csrfHeader)), []byte(csrfValue(s.cfg.APIKey))) != 1 {
				return &apiError{Status: http.StatusForbidden, Type: typeAuth, Code: "csrf_token",
					Message: "missing or wrong " + csrfHeader + " header: a request authenticated by the login cookie must carry the token of the kvlab_csrf cookie"}
			}
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

// safeNext is a path on this server to return to after login ("/" for anything else): it must
// start with one '/', and may hold no backslash and no control character (browsers drop tabs
// and newlines, so "/\t/evil.com" would become "//evil.com"), nor a scheme or host.
func safeNext(next string) string {
	if len(next) > 2048 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	for _, r := range next {
		if r < 0x20 || r == 0x7f || r == '\\' || (r >= 0x80 && r <= 0x9f) {
			return "/"
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
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
	if err := c.Request().ParseForm(); err != nil {
		bodyFailed(c, c.Request().Body)
		return badRequest("", "the login form could not be read: %s", clip(err.Error(), 200))
	}
	bodyRead(c)
	next := safeNext(c.FormValue("next"))
	if s.cfg.APIKey == "" {
		return c.Redirect(http.StatusSeeOther, next)
	}
	if subtle.ConstantTimeCompare([]byte(c.FormValue("key")), []byte(s.cfg.APIKey)) != 1 {
		return s.renderPage(c, http.StatusUnauthorized, web.LoginPage(s.pageData("login"), next, "That is not the server's API key."))
	}
	c.SetCookie(&http.Cookie{Name: authCookie, Value: cookieValue(s.cfg.APIKey), Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.Scheme() == "https"})
	c.SetCookie(&http.Cookie{Name: csrfCookie, Value: csrfValue(s.cfg.APIKey), Path: "/",
		SameSite: http.SameSiteStrictMode, Secure: c.Scheme() == "https"})
	return c.Redirect(http.StatusSeeOther, next)
}
