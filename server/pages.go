package server

import (
	"net/http"

	"github.com/a-h/templ"
	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
)

// pageTitles are the document titles of the pages by navigation key.
var pageTitles = map[string]string{
	"plan":   "kvlab · plan — will it fit?",
	"chat":   "kvlab · chat",
	"lab":    "kvlab · lab — live A/B",
	"runs":   "kvlab · runs",
	"system": "kvlab · system",
	"login":  "kvlab · sign in",
	"error":  "kvlab · error",
}

// pageData is the frame of a page.
func (s *Server) pageData(active string) web.Page {
	p := web.Page{Title: pageTitles[active], Active: active, AssetBase: assetPrefix}
	if s.cfg.APIKey != "" {
		p.Note = "API key required"
	}
	return p
}

// renderPage writes a page component with a status.
func (s *Server) renderPage(c echo.Context, status int, page templ.Component) error {
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	c.Response().WriteHeader(status)
	return page.Render(c.Request().Context(), c.Response())
}

// errorPage is the page of an error.
func (s *Server) errorPage(status int, msg string) templ.Component {
	return web.ErrorPage(s.pageData("error"), status, msg)
}

// defaultModel is the model the pages preselect: the first loaded one, else the first the
// engine runs.
func (s *Server) defaultModel() string {
	if l := s.models.loaded(); len(l) > 0 {
		return l[0].Info.Name
	}
	for _, m := range s.models.list() {
		if supported(m) {
			return m.Name
		}
	}
	return ""
}

// chatPage is /chat.
func (s *Server) chatPage(c echo.Context) error {
	d := web.ChatData{Page: s.pageData("chat"), Models: s.modelStatus(), Default: s.defaultModel(), Places: s.cfg.Places}
	if m := c.QueryParam("model"); m != "" {
		d.Default = m
	}
	return s.renderPage(c, http.StatusOK, web.ChatPage(d))
}
