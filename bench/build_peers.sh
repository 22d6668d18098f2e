#!/usr/bin/env bash
# Builds the peers that bench/vs_peers.py runs, outside this repository, without changing their sources:
#   BUILD/ns3/build/third, BUILD/ns3/build/third_count         HPCC's ns-3 (scratch/third.cc)
#   HTSIM/sim/datacenter/htsim_roce, BUILD/htsim-count/htsim_roce_count   htsim's RoCE program
# The *_count programs are the same code with a copy of the event loop's file that counts
# the events it runs and prints `ns3_events N` / `htsim_events N` on stderr at exit.
#
# usage: bench/build_peers.sh HPCC_CHECKOUT|- HTSIM_CHECKOUT|- BUILD [JOBS]
#   HPCC_CHECKOUT: alibaba-edu/High-Precision-Congestion-Control (commit 9f4be2a)
#   HTSIM_CHECKOUT: Broadcom/csg-htsim (built in place, in its sim/ folder)
#   -: skip that peer. JOBS: parallel compile jobs (default 2).
# Needs g++, make, cmake and ninja-build (apt-get install -y g++ make cmake ninja-build), and
# HPCC_NS3_TOOLS (default ../shared/tools/hpcc_ns3 beside this repository), whose gen_cmake.py
# collects ns-3's modules into a CMake build (ns-3.17's waf needs Python 2).
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,14p' "$0"; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${HPCC_NS3_TOOLS:-$root/../shared/tools/hpcc_ns3}
jobs=${4:-2}
mkdir -p "$3" && build=$(cd "$3" && pwd)

if [ "$1" != "-" ]; then
    hpcc=$(cd "$1" && pwd)
    [ -f "$tools/gen_cmake.py" ] || { echo "build_peers: no $tools/gen_cmake.py (set HPCC_NS3_TOOLS)" >&2; exit 2; }
    python3 "$tools/gen_cmake.py" "$hpcc/simulation" "$build/ns3" >/dev/null
    # third_count: third.cc with a counting copy of default-simulator-impl.cc (ProcessOneEvent)
    python3 - "$hpcc/simulation/src/core/model/default-simulator-impl.cc" "$build/ns3" <<'EOF'
import re, sys
orig, out = sys.argv[1], sys.argv[2]
src = open(orig).read()
step = "DefaultSimulatorImpl::ProcessOneEvent (void)\n{\n"
assert src.count(step) == 1, "ProcessOneEvent not found"
src = src.replace(step, step + "  g_ns3_events.n++;\n")
src = re.sub(r'^#include "([a-z-]+\.h)"', r'#include "ns3/\1"', src, flags=re.M)
counter = ('#include <cstdio>\nnamespace {\nstruct Ns3EventCounter { unsigned long long n = 0; '
           '~Ns3EventCounter () { std::fprintf (stderr, "ns3_events %llu\\n", n); } } g_ns3_events;\n}\n')
i = src.index("namespace ns3")
open(out + "/default-simulator-impl-count.cc", "w").write(src[:i] + counter + src[i:])
cm = open(out + "/CMakeLists.txt").read()
assert cm.count("  " + orig + "\n") == 1, "default-simulator-impl.cc not in the CMakeLists"
cm = cm.replace("  " + orig + "\n", "")
third = re.search(r"add_executable\(third (\S+)\)", cm).group(1)
cm = cm.replace(f"add_executable(third {third})",
                f"add_executable(third {third} {orig})\n"
                f"add_executable(third_count {third} {out}/default-simulator-impl-count.cc)\n"
                f"target_link_libraries(third_count -Wl,--whole-archive ns3all -Wl,--no-whole-archive pthread rt)")
open(out + "/CMakeLists.txt", "w").write(cm)
EOF
    mkdir -p "$build/ns3/build"
    (cd "$build/ns3/build" && cmake -G Ninja .. >/dev/null && ninja -j"$jobs")
    echo "built $build/ns3/build/third and third_count"
fi

if [ "$2" != "-" ]; then
    sim=$(cd "$2/sim" && pwd)
    make -C "$sim" -j"$jobs" libhtsim.a
    make -C "$sim/datacenter" -j"$jobs" htsim_roce
    # htsim_roce_count: the same objects linked with a counting copy of eventlist.cpp (doNextEvent)
    mkdir -p "$build/htsim-count"
    python3 - "$sim/eventlist.cpp" "$build/htsim-count/eventlist_count.cpp" <<'EOF'
import sys
src = open(sys.argv[1]).read()
for step in ("    nextsource->doNextEvent();\n    return true;", "        target->activate();\n        return true;"):
    assert src.count(step) == 1, "doNextEvent not as expected"
    src = src.replace(step, "    g_htsim_events.n++;\n" + step)
counter = ('#include <cstdio>\nnamespace {\nstruct HtsimEventCounter { unsigned long long n = 0; '
           '~HtsimEventCounter () { std::fprintf (stderr, "htsim_events %llu\\n", n); } } g_htsim_events;\n}\n')
i = src.index('#include "trigger.h"\n') + len('#include "trigger.h"\n')
open(sys.argv[2], "w").write(src[:i] + counter + src[i:])
EOF
    cd "$build/htsim-count"
    g++ -std=c++11 -O3 -fPIE -I"$sim" -c eventlist_count.cpp -o eventlist.o
    cp "$sim/libhtsim.a" libhtsim.a && ar r libhtsim.a eventlist.o
    link=$(make -s -n -B -C "$sim/datacenter" htsim_roce | grep -E -- '-o htsim_roce$')
    link=${link/-L.. /-L$build/htsim-count }
    (cd "$sim/datacenter" && eval "${link% htsim_roce} $build/htsim-count/htsim_roce_count")
    echo "built $sim/datacenter/htsim_roce and $build/htsim-count/htsim_roce_count"
fi
