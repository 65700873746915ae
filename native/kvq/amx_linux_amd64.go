//go:build linux && amd64 && !purego

package kvq

import "syscall"

// amxPermit asks Linux for this process's AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA: Linux 5.16 and later), without which the first tile instruction
// faults; true where it is granted. It is asked once, at package init (fp8AMXOn), and only on
// Intel CPUs with AMX-BF16 and the other features fp8's AMX kernels need. A granted permission
// holds for the whole process: signal frames then take room for the 8 KiB of tile data (about
// 11 KiB in all), and the kernel raises the smallest alternate signal stack (sigaltstack) it
// accepts to match: it refuses the request where a thread already has a smaller one, and
// smaller ones afterwards. Go's signal stacks (32 KiB a thread, the runtime's) hold such
// frames, and nothing here installs others (no cgo in this module).
func amxPermit() bool {
	const sysArchPrctl, archReqXcompPerm, xfeatureXtiledata = 158, 0x1023, 18
	_, _, e := syscall.RawSyscall(sysArchPrctl, archReqXcompPerm, xfeatureXtiledata, 0)
	return e == 0
}
