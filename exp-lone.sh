#!/usr/bin/env bash
# Lone linear resize at general ratios: the fused kernel (this tree) against resize_linear_aos (the tree before).
set -u
R=$OUT/r; mkdir -p $R
P="-DCMAKE_PREFIX_PATH=$PWD/.deps/prefix/usr"
export LD_LIBRARY_PATH=$PWD/.deps/prefix/usr/lib/x86_64-linux-gnu
mkdir -p /tmp/before && tar --exclude=./build --exclude=./build-gpu -cf - . | tar -xf - -C /tmp/before
(cd /tmp/before && patch -R -p1 < lone-resize.patch) > $R/patch.log 2>&1
(cmake --preset gpu $P > $R/cfg-after.log 2>&1 && cmake --build build-gpu -j8 --target imgpipe > $R/build-after.log 2>&1; echo after-built $?) &
(cd /tmp/before && cmake --preset gpu $P > $R/cfg-before.log 2>&1 && cmake --build build-gpu -j8 --target imgpipe > $R/build-before.log 2>&1; echo before-built $?) &
wait
for round in 1 2; do
  for t in before after; do
    bin=build-gpu/apps/imgpipe; [ $t = before ] && bin=/tmp/before/build-gpu/apps/imgpipe
    $bin bench --matrix --matrix-sizes 1000x700,1280x720,1920x1088,3840x2176 --backends naive,optimized,npp --frames 128 --repeats 5 --json $R/matrix-$t-$round.json > $R/matrix-$t-$round.txt 2>/dev/null
    for c in 1920x1080:2560x1440 1280x720:1920x1080 1920x1080:640x480 1920x1080:224x224 3840x2160:1000x700 1000x700:1920x1080; do
      $bin bench --ops resize=${c#*:} --size ${c%%:*} --sections kernel --backends naive,optimized,npp --frames 128 --repeats 5 --json $R/ops-$t-$round-${c/:/-}.json > $R/ops-$t-$round-${c/:/-}.txt 2>/dev/null
    done
  done
done
cd $OUT && tar -czf results.tgz r
for t in before after; do grep -E "resize=[0-9x]+ " $R/matrix-$t-2.txt; done
