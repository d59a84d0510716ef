# bench/ - `make bench` builds and runs the benchmarks (never part of make check).
