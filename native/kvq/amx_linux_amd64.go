//go:build linux && amd64 && !purego

package kvq

import "syscall"

// amxPermit asks Linux for this process's AMX tile data (arch_prctl ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA: Linux 5.16 and later), without which the first tile instruction
// faults; true where it is granted.
func amxPermit() bool {
	const sysArchPrctl, archReqXcompPerm, xfeatureXtiledata = 158, 0x1023, 18
	_, _, e := syscall.RawSyscall(sysArchPrctl, archReqXcompPerm, xfeatureXtiledata, 0)
	return e == 0
}
