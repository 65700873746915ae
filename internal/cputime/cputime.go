// Package cputime reads CPU time for speed measurements that should not count time spent
// waiting for a core on a busy machine (benchmarks and speed reports on shared hosts).
package cputime

import "time"

var start = time.Now()
