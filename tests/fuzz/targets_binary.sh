# targets_binary.sh - sourced by run.sh: the binary-format targets, built
# when api/binary.c (branch `bin`) is in the tree.
if [ -f "$S/api/binary.c" ]; then
  SRC[fuzz_npy]="$API_SRC $LIB_SRC"
  SRC[fuzz_query]="$API_SRC $LIB_SRC"
  TARGETS+=(fuzz_npy fuzz_query)
else
  echo "fuzz: api/binary.c is not in this tree yet: fuzz_npy and fuzz_query skipped"
fi
