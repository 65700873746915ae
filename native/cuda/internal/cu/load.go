package cu

import (
	"os"
	"path/filepath"
)

// DriverEnv names the environment variable that overrides the driver library's path (for
// example a driver shim in tests); unset, Load opens libcuda.so.1 from the loader's path.
const DriverEnv = "KVLAB_CUDA_DRIVER"

// NVRTCEnv names the environment variable that overrides the NVRTC library's path.
const NVRTCEnv = "KVLAB_NVRTC"

// DriverCandidates are the library names Load tries, in order.
func DriverCandidates() []string {
	if p := os.Getenv(DriverEnv); p != "" {
		return []string{p}
	}
	return []string{"libcuda.so.1"}
}

// NVRTCCandidates are the library names LoadNVRTC tries, in order: $KVLAB_NVRTC alone when
// set; otherwise libnvrtc.so.13 and .12 from the loader's path, then the same names under
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64, then unversioned libnvrtc.so.
func NVRTCCandidates() []string {
	if p := os.Getenv(NVRTCEnv); p != "" {
		return []string{p}
	}
	names := []string{"libnvrtc.so.13", "libnvrtc.so.12"}
	out := append([]string(nil), names...)
	var dirs []string
	if h := os.Getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	for _, d := range dirs {
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return append(out, "libnvrtc.so")
}
