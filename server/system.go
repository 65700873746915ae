package server

import (
	"net/http"
	"runtime"
	"time"

	"github.com/kvlab/kvlab/native/gpuinfo"
	"github.com/kvlab/kvlab/server/api"
	"github.com/kvlab/kvlab/web"
	"github.com/labstack/echo/v4"
)

// DefaultMemory is the memory the KV policy budgets against by default: the host's available
// memory, because the engine's forward pass runs on the CPU and its KV caches live in host
// memory. (With Config.Device "cuda" the policy budgets against the device's free memory,
// cuMemGetInfo, instead; the GPUs are listed on /system.)
func DefaultMemory() (MemInfo, error) { return HostMemory() }

// modelStatus describes every model.
func (s *Server) modelStatus() []api.ModelStatus {
	loaded := map[string]*Engine{}
	for _, e := range s.models.loaded() {
		loaded[e.Info.Name] = e
	}
	out := []api.ModelStatus{}
	for _, m := range s.models.list() {
		st := api.ModelStatus{Name: m.Name, Title: m.Title, Path: m.Path, Source: string(m.Source), Arch: m.Arch, Size: m.Size, Supported: supported(m)}
		if _, err := s.models.status(m.Name); err != nil {
			st.Error = err.Error()
		}
		if e := loaded[m.Name]; e != nil {
			st.Loaded = true
			st.Ctx, st.KVFormat, st.KVReason, st.KVFits = e.Ctx, e.Decision.Format, e.Decision.Reason, e.Decision.Fits
			st.KVWarning = e.KVWarning
			st.KVBudget, st.BytesPerCell, st.KVBytes = e.Decision.BudgetBytes, e.BytesPerCell(), e.KVBytes()
			st.WeightBytes, st.WeightType, st.Template = e.WeightBytes, e.Model.WeightType().String(), e.Template.Name()
			st.Running, st.LoadMs = e.Running(), float64(e.LoadTime.Microseconds())/1000
		}
		out = append(out, st)
	}
	return out
}

// system gathers SystemInfo.
func (s *Server) system() api.SystemInfo {
	si := api.SystemInfo{OS: runtime.GOOS, Arch: runtime.GOARCH, CPU: cpuName(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(),
		Device: "CPU (pure Go engine)", Models: s.modelStatus(), Running: s.gate.running(), Queued: int(s.gate.queued.Load()),
		MaxConcurrent: s.cfg.MaxConcurrent, MaxQueue: s.cfg.MaxQueue, Sessions: s.sessions.len(), History: s.history.describe(),
		Auth: s.cfg.APIKey != "", UptimeSeconds: time.Since(s.started).Seconds()}
	if s.cfg.Device != DeviceCPU {
		si.Device = "GPU, " + s.cfg.backend.Name() + " (native/cuda engine)"
	}
	if gpus, err := gpuinfo.Devices(); err != nil {
		si.GPUError = err.Error()
	} else {
		for _, g := range gpus {
			si.GPUs = append(si.GPUs, api.GPU(g))
		}
	}
	mem, err := s.cfg.Memory()
	si.Memory = mem
	if err != nil {
		si.MemoryError = err.Error()
	}
	for _, m := range si.Models {
		si.KVBytes += m.KVBytes
	}
	return si
}

// apiSystem is GET /api/system.
func (s *Server) apiSystem(c echo.Context) error { return c.JSON(http.StatusOK, s.system()) }

// apiModels is GET /api/models.
func (s *Server) apiModels(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]any{"models": s.modelStatus(), "places": s.cfg.Places})
}

// systemPage is /system.
func (s *Server) systemPage(c echo.Context) error {
	si := s.system()
	d := web.SystemData{Page: s.pageData("system"), Info: si}
	return s.renderPage(c, http.StatusOK, web.SystemPage(d))
}
