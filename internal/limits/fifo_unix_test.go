//go:build unix

package limits

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestFIFO: a named pipe is refused without opening it (which would block).
func TestFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	if err := RegularFile(fifo); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Errorf("fifo: %v", err)
	}
}
