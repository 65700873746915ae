package server

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// hostMemory reads MemTotal and MemAvailable from /proc/meminfo (MemAvailable counts the page
// cache the kernel can reclaim, which is what a new allocation can get).
func hostMemory() (MemInfo, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return MemInfo{}, err
	}
	defer f.Close()
	mi := MemInfo{Source: "/proc/meminfo MemAvailable"}
	var haveTotal, haveAvail bool
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n <<= 10
		}
		switch key {
		case "MemTotal":
			mi.TotalBytes, haveTotal = n, true
		case "MemAvailable":
			mi.FreeBytes, haveAvail = n, true
		}
	}
	if err := sc.Err(); err != nil {
		return MemInfo{}, err
	}
	if !haveTotal || !haveAvail {
		return MemInfo{}, fmt.Errorf("/proc/meminfo has no MemTotal or MemAvailable: %w", ErrMemUnknown)
	}
	return mi, nil
}

// cpuName is the first "model name" of /proc/cpuinfo.
func cpuName() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
