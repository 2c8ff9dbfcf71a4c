#!/usr/bin/env bash
# scripts/gpu/profile.sh -- Nsight Compute on chosen fuser kernels, against a Release build at
# ${BUILD:-/tmp/b}: each PROFILE_CASES entry "FILE SET..." (';'-separated entries, e.g.
# "fuser/tests/data/softcap_cross_entropy.fusion DT=bf16;suites/layer_norm/layer_norm_fwd.fusion
# N=16384 D=768 DT=bf16") is launched once with `fuser run --device gpu` under ncu (the
# speed-of-light, compute, memory, occupancy, launch, instruction and warp-state sections;
# ncu's default clock control), and the lines that say where the time goes are printed:
# duration, SM frequency, DRAM and issue throughput, pipe utilization, occupancy, registers,
# the top stall reasons. The full reports go to ${OUT:-/tmp/out}/profile/*.txt.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" profile
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
[ -x "$ncu" ] || { echo "profile.sh: ncu is not installed"; exit 2; }
IFS=';' read -r -a cases <<<"${PROFILE_CASES:?PROFILE_CASES is empty}"
n=0
for spec in "${cases[@]}"; do
  read -r -a words <<<"$spec"
  file=${words[0]}
  sets=()
  for s in "${words[@]:1}"; do sets+=(--set "$s"); done
  n=$((n + 1))
  tag="p$n-$(basename "$file" .fusion)"
  echo "==== $spec"
  timeout 150 "$ncu" --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
      --section Occupancy --section LaunchStats --section InstructionStats --section WarpStateStats \
      --section SchedulerStats --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,sm__inst_executed_pipe_xu.sum \
      --launch-count 1 --page details --print-units base \
      "$build/fuser/fuser" run "$here/$file" "${sets[@]}" --device gpu >"$out/$tag.txt" 2>&1
  echo "exit $?"
  grep -E "^  [a-zA-Z_0-9]+.*\(|Duration|SM Frequency|DRAM Throughput|Memory Throughput|Compute \(SM\) Throughput|Issue Slots Busy|Issued Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit|Warp Cycles Per Issued|No Eligible|Active Warps Per Scheduler|Eligible Warps|pipe_|inst_executed|Executed Instructions  |Stall|One or More" "$out/$tag.txt" | head -n 45
done
