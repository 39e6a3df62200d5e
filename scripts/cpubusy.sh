#!/usr/bin/env bash
# Prints, once a second, how busy the machine's CPUs were over that second
# (percent of all cores, from /proc/stat), for reading a benchmark's phases
# beside its output: `scripts/cpubusy.sh > busy.log &` before the run.
set -euo pipefail
read -r -a prev < <(head -1 /proc/stat)
while sleep 1; do
	read -r -a cur < <(head -1 /proc/stat)
	total=0
	for i in 1 2 3 4 5 6 7 8; do total=$((total + cur[i] - prev[i])); done
	idle=$(((cur[4] - prev[4]) + (cur[5] - prev[5])))
	echo "$(date +%T) busy=$((100 * (total - idle) / (total > 0 ? total : 1)))%"
	prev=("${cur[@]}")
done
