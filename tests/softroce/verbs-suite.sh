#!/bin/sh
# verbs-suite.sh: runs inside the Soft-RoCE guest (guest-run) and owns one thing:
# running CTest suites on the verbs backend, their fabrics spread over the guest's rxe
# devices, in one boot.
#
#   guest-run -- tests/softroce/verbs-suite.sh BUILD_DIR [CTEST ARGS...]
#
# Default selection: the fabric and messaging suites (-L 'fabric|msg'). Any other
# suite runs on verbs the same way, e.g. `... verbs-suite.sh build -L tx`: the one
# switch is FARM_TEST_FABRICS=verbs (tests/support/fabric_test_util.h). Iteration
# counts are scaled down (FARM_STRESS_SCALE, default 0.05): a one-sided op takes
# tens of microseconds here, and no test asserts on time.
set -eu
if [ "${FARM_IN_SOFTROCE_GUEST:-}" != 1 ]; then
  echo "verbs-suite.sh: run me inside the guest: tests/softroce/guest-run -- $0 $*" >&2
  exit 2
fi
[ $# -ge 1 ] || { echo "usage: verbs-suite.sh BUILD_DIR [CTEST ARGS...]" >&2; exit 2; }
build=$1
shift
[ $# -gt 0 ] || set -- -L 'fabric|msg'
export FARM_TEST_FABRICS=verbs
export FARM_TEST_VERBS_DEVICES="$FARM_RXE_DEVICES"
export FARM_STRESS_SCALE="${FARM_STRESS_SCALE:-0.05}"
cd "$build"
echo "verbs-suite: ctest $* on $FARM_RXE_DEVICES (FARM_STRESS_SCALE=$FARM_STRESS_SCALE)"
# -LE softroce: this suite's own CTest entry must not start a guest inside the guest.
exec ctest --output-on-failure --timeout 600 -LE softroce "$@"
