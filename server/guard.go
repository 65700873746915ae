package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
	"time"
	"unicode"

	"github.com/labstack/echo/v4"
)

// The boundary of the server (docs/security.md): loopback is not one, since every web page the
// user opens can send requests to 127.0.0.1. guard enforces, on every route before anything
// else runs:
//
//   - the Host allow-list (DNS rebinding): the bound address, localhost, loopback IPs, and the
//     names of --allow-host; anything else is 421;
//   - proof of same origin on every state-changing request and websocket upgrade: an Origin
//     whose host is on the allow-list and whose port is the server's, or, without Origin, a
//     Sec-Fetch-Site of same-origin or none; a client that sends neither is not a browser;
//   - a JSON Content-Type on every POST/PUT/PATCH of the APIs (415): an HTML form or a
//     "simple" fetch cannot send one without a CORS preflight, which the server never grants;
//   - a deadline on reading the request body.

// DefaultBodyTimeout bounds how long reading a request body may take.
const DefaultBodyTimeout = 30 * time.Second

// MinPublicKeyLen is the shortest API key accepted on a non-loopback address.
const MinPublicKeyLen = 16

// csrfCookie holds the token the pages echo in csrfHeader on state-changing fetches when the
// session is the login cookie (a double-submit token derived from the key, never the key).
const (
	csrfCookie = "kvlab_csrf"
	csrfHeader = "X-CSRF-Token"
)

func csrfValue(key string) string {
	h := sha256.Sum256([]byte("kvlab csrf token\x00" + key))
	return hex.EncodeToString(h[:16])
}

// checkAPIKey refuses a key that can never match (surrounding or only whitespace, control
// characters) and, on a public address, a short one.
func checkAPIKey(key string, public bool) error {
	if key == "" {
		return nil
	}
	if strings.TrimSpace(key) != key {
		return errors.New("server: --api-key: the key starts or ends with whitespace (clients' tokens are trimmed, so it could never match)")
	}
	for _, r := range key {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return errors.New("server: --api-key: the key contains whitespace or a control character")
		}
	}
	if public && len(key) < MinPublicKeyLen {
		return fmt.Errorf("server: --api-key: %d characters is too short for a non-loopback address: use at least %d (e.g. openssl rand -hex 16)", len(key), MinPublicKeyLen)
	}
	return nil
}

// hostPolicy is the Host allow-list.
type hostPolicy struct {
	// names are lower-case host names or path.Match patterns ("*.lan").
	names []string
	// bound is the bound IP (nil for a name or all interfaces); anyIP: bound to all.
	bound net.IP
	anyIP bool
}

func newHostPolicy(addr string, extra []string) (*hostPolicy, error) {
	p := &hostPolicy{names: []string{"localhost"}}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("server: address %q: %w", addr, err)
	}
	host = normHost(host)
	switch ip := net.ParseIP(host); {
	case host == "":
		p.anyIP = true
	case ip != nil && ip.IsUnspecified():
		p.anyIP = true
	case ip != nil:
		p.bound = ip
	default:
		p.names = append(p.names, host)
	}
	if p.anyIP {
		// Reached on every interface: the machine's own name is how the LAN names it.
		if h, err := os.Hostname(); err == nil && h != "" {
			h = normHost(h)
			p.names = append(p.names, h, h+".local")
		}
	}
	for _, n := range extra {
		n = normHost(strings.TrimSpace(n))
		if n == "" {
			continue
		}
		if h, _, err := net.SplitHostPort(n); err == nil {
			n = normHost(h)
		}
		if _, err := path.Match(n, "x"); err != nil || strings.ContainsAny(n, "/\\ ") {
			return nil, fmt.Errorf("server: --allow-host %q: want a host name or a pattern such as *.lan", n)
		}
		p.names = append(p.names, n)
	}
	return p, nil
}

// normHost lower-cases a host name and drops IPv6 brackets and a trailing dot.
func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
	return strings.TrimSuffix(h, ".")
}

// splitHost splits a Host header into its name and port ("" when absent).
func splitHost(hostport string) (host, port string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		return normHost(h), p
	}
	return normHost(hostport), ""
}

// allowed reports whether a host name (no port) is one the server answers to. An IP address
// cannot be rebound, so any of the machine's own is fine; a name must be on the list.
func (p *hostPolicy) allowed(host string) bool {
	if host == "" {
		return false
	}
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback() || p.anyIP || (p.bound != nil && ip.Equal(p.bound))
	}
	for _, n := range p.names {
		if n == host {
			return true
		}
		if ok, _ := path.Match(n, host); ok {
			return true
		}
	}
	return false
}

// stateChanging reports whether a request may change state or start work: every method but
// GET, HEAD and OPTIONS, and websocket upgrades.
func stateChanging(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return isUpgrade(r)
	}
	return true
}

func isUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// defaultPort is the port of a scheme.
func defaultPort(scheme string) string {
	if scheme == "https" || scheme == "wss" {
		return "443"
	}
	return "80"
}

// checkSameOrigin requires a browser request to come from one of the server's own pages:
// Origin's host on the allow-list (or matching OriginPatterns) and its port the one the
// request was sent to. Without Origin, Sec-Fetch-Site must be same-origin or none; a request
// with neither comes from a program, not a page.
func (s *Server) checkSameOrigin(r *http.Request) error {
	refuse := func(msg string) error {
		return &apiError{Status: http.StatusForbidden, Type: typeAuth, Code: "bad_origin", Message: msg}
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		switch site := strings.ToLower(r.Header.Get("Sec-Fetch-Site")); site {
		case "", "same-origin", "none":
			return nil
		default:
			return refuse("a " + clip(site, 32) + " request may not change state or start work on this server")
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || origin == "null" {
		return refuse("request from origin " + quoteClip(origin) + " refused: only the server's own pages may send it")
	}
	for _, p := range s.cfg.OriginPatterns {
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(u.Host)); ok {
			return nil
		}
	}
	oh, op := splitHost(u.Host)
	if op == "" {
		op = defaultPort(u.Scheme)
	}
	_, rp := splitHost(r.Host)
	if rp == "" {
		// No port: the default of the scheme the client used, which behind a TLS proxy is
		// not the one this server sees.
		rp = defaultPort(u.Scheme)
	}
	if (u.Scheme == "http" || u.Scheme == "https") && s.hosts.allowed(oh) && op == rp {
		return nil
	}
	return refuse("request from origin " + quoteClip(origin) + " refused: only the server's own pages may send it (see --allow-host)")
}

// jsonContentType reports whether a Content-Type is JSON.
func jsonContentType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// guard is the boundary middleware (see the top of this file).
func (s *Server) guard(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		host, _ := splitHost(r.Host)
		if !s.hosts.allowed(host) {
			return &apiError{Status: http.StatusMisdirectedRequest, Type: typeAuth, Code: "bad_host",
				Message: "host " + quoteClip(r.Host) + " is not one this server answers to (start it with --allow-host NAME to add one)"}
		}
		if stateChanging(r) {
			if err := s.checkSameOrigin(r); err != nil {
				return err
			}
		}
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if isAPIPath(r.URL.Path) && !jsonContentType(r.Header.Get("Content-Type")) {
				return &apiError{Status: http.StatusUnsupportedMediaType, Type: typeInvalid, Code: "unsupported_media_type",
					Message: "Content-Type " + quoteClip(r.Header.Get("Content-Type")) + ": this API takes application/json"}
			}
			// The body must arrive within the deadline; decodeJSON lifts it once read.
			_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
		}
		return next(c)
	}
}

// bodyRead lifts the body deadline once a handler has read the body, so that a long
// generation's connection is not cut while it streams.
func bodyRead(c echo.Context) {
	_ = http.NewResponseController(c.Response().Writer).SetReadDeadline(time.Time{})
}

// bodyFailed closes the connection after the answer to a body that could not be read, and
// reads what is left of body (bounded by its MaxBytesReader and the body deadline) first:
// closing a socket with unread data resets it, and the client may lose the answer to the reset.
// body must be the request's bounded reader, never the raw one.
func bodyFailed(c echo.Context, body io.Reader) {
	c.Response().Header().Set("Connection", "close")
	_, _ = io.Copy(io.Discard, body)
}

// clip bounds a string quoted in an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func quoteClip(s string) string { return fmt.Sprintf("%q", clip(s, 128)) }
