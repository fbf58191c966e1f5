#!/bin/sh
# run_jvm_peers.sh — runs the JVM peer driver (src/locklab/jvm/JvmPeers.java)
# with the JVM flags every locklab run uses; all arguments go to the driver:
#
#   benches/jvm/run_jvm_peers.sh --mode=quick --out=results          # both suites
#   benches/jvm/run_jvm_peers.sh --suite=locks --waiters=1,4 --cs_ns=200
#   benches/jvm/run_jvm_peers.sh --selftest
#
# The jar is looked for in $LOCKLAB_BUILD_DIR/benches/jvm (default
# build/release of this repository); LOCKLAB_GIT_REVISION, if set, lands in the
# JSON's context.
#
# JVM flags: G1 named explicitly because the JVM picks Serial GC by itself on a
# machine it does not consider a server (under 2 CPUs or 1792 MB), and a fixed
# 256 MB heap so that no point pays for the heap growing (nothing here needs
# more: the counters allocate nothing, the locks only AQS queue nodes).
# -Dfile.encoding=UTF-8: JDK 17 takes its default charset from the locale, and
# a bare container has none (JDK 18 made UTF-8 the default).
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
jar=${LOCKLAB_BUILD_DIR:-$root/build/release}/benches/jvm/locklab_jvm.jar
if [ ! -f "$jar" ]; then
  echo "run_jvm_peers.sh: no $jar; build first (./lab build), with a JDK installed" >&2
  exit 2
fi
exec java -Dfile.encoding=UTF-8 -XX:+UseG1GC -Xms256m -Xmx256m -jar "$jar" "$@"
