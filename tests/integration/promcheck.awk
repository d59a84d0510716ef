# promcheck.awk - a strict checker of the Prometheus text exposition format
# 0.0.4 as reduced writes it (used by t_metrics.sh; LC_ALL=C awk -f).
# Prints one line per problem and exits 1 if there is any.  Checks:
#   - every line is "# HELP name text", "# TYPE name type" or a sample
#     "name[{labels}] value"; names, label names and escapes are valid;
#   - HELP and TYPE come once per family, before its samples, and a
#     family's samples are contiguous;
#   - samples belong to their family: counters end in _total, histograms
#     have only _bucket (with le), _sum and _count;
#   - no series appears twice; values are numbers;
#   - each histogram series: le strictly increasing, ending with +Inf,
#     cumulative counts non-decreasing, +Inf bucket = _count, _sum present.
function bad(msg) { print "line " NR ": " msg; errors++ }
function isnum(v) { return v ~ /^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$/ || v ~ /^[-+]?Inf$/ || v == "NaN" }
# Parses "{a="x",b="y"}" at the start of s into LN[], LV[] (NL of them);
# returns the length consumed, or -1.
function parse_labels(s,    i, n, c, name, val, seen) {
  NL = 0
  if (substr(s, 1, 1) != "{") return 0
  i = 2; n = length(s)
  if (substr(s, i, 1) == "}") return 2
  while (1) {
    if (!match(substr(s, i), /^[a-zA-Z_][a-zA-Z0-9_]*="/)) return -1
    name = substr(s, i, RLENGTH - 2); i += RLENGTH
    if (name in seen) return -1
    seen[name] = 1
    val = ""
    while (1) {
      if (i > n) return -1
      c = substr(s, i, 1)
      if (c == "\\") {
        c = substr(s, i + 1, 1)
        if (c == "\\" || c == "\"") val = val c
        else if (c == "n") val = val "\n"
        else return -1
        i += 2
      } else if (c == "\"") { i++; break }
      else if (c == "\n") return -1
      else { val = val c; i++ }
    }
    NL++; LN[NL] = name; LV[NL] = val
    c = substr(s, i, 1)
    if (c == "}") return i
    if (c != ",") return -1
    i++
  }
}
BEGIN { errors = 0; cur = "" }
/^# HELP / {
  split($0, f, " ")
  name = f[3]
  if (name !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) bad("bad metric name in HELP: " name)
  if (name in help) bad("second HELP for " name)
  if (name in done) bad("HELP for " name " after its samples ended")
  help[name] = 1
  next
}
/^# TYPE / {
  name = $3; type = $4
  if (NF != 4) bad("TYPE line needs a name and a type")
  if (type !~ /^(counter|gauge|histogram|summary|untyped)$/) bad("bad type " type)
  if (!(name in help)) bad("TYPE for " name " without HELP before it")
  if (name in ftype) bad("second TYPE for " name)
  if (type == "counter" && name !~ /_total$/) bad("counter " name " does not end in _total")
  ftype[name] = type
  if (cur != "" && cur != name) done[cur] = 1
  cur = name
  next
}
/^#/ { next }
/^$/ { bad("empty line"); next }
{
  if (!match($0, /^[a-zA-Z_:][a-zA-Z0-9_:]*/)) { bad("bad sample line: " $0); next }
  name = substr($0, 1, RLENGTH); rest = substr($0, RLENGTH + 1)
  len = parse_labels(rest)
  if (len < 0) { bad("bad labels: " $0); next }
  labels = substr(rest, 1, len); rest = substr(rest, len + 1)
  if (rest !~ /^ [^ ]+$/) { bad("bad value part: " $0); next }
  value = substr(rest, 2)
  if (!isnum(value)) bad("value is not a number: " value)
  # the family
  fam = name; suffix = ""
  if (!(fam in ftype) && match(name, /_(bucket|sum|count)$/)) {
    fam = substr(name, 1, RSTART - 1); suffix = substr(name, RSTART + 1)
  }
  if (!(fam in ftype)) { bad("sample " name " without TYPE"); next }
  if (fam != cur) bad("sample of " fam " outside its family block")
  t = ftype[fam]
  if (t == "histogram" && suffix == "") bad("histogram sample " name " without _bucket/_sum/_count")
  if (t != "histogram" && t != "summary" && suffix != "") bad("suffix on a " t ": " name)
  # series identity: name + labels sorted, le apart
  le = ""; key = ""
  for (i = 1; i <= NL; i++) {
    if (LN[i] == "le") { le = LV[i]; continue }
    key = key "\001" LN[i] "=" LV[i]
  }
  if ((name SUBSEP labels) in series) bad("duplicate series " name labels)
  series[name SUBSEP labels] = 1
  if (t != "histogram") next
  hk = fam SUBSEP key
  if (suffix == "bucket") {
    if (le == "") { bad("_bucket without le"); next }
    if (!isnum(le)) bad("le is not a number: " le)
    if (hk in hinf) bad("bucket after +Inf for " fam key)
    if ((hk in hle) && le != "+Inf" && le + 0 <= hle[hk] + 0) bad("le not increasing: " le)
    if ((hk in hcnt) && value + 0 < hcnt[hk] + 0) bad("bucket counts decrease at le=" le)
    hle[hk] = le; hcnt[hk] = value
    if (le == "+Inf") hinf[hk] = value
    hseen[hk] = 1
  } else if (le != "") {
    bad("le on " name)
  } else if (suffix == "count") {
    if (!(hk in hinf)) bad(name " without a +Inf bucket before it")
    else if (hinf[hk] + 0 != value + 0) bad(name " " value " != +Inf bucket " hinf[hk])
    hcount[hk] = 1
  } else if (suffix == "sum") {
    hsum[hk] = 1
  }
}
END {
  for (hk in hseen) {
    if (!(hk in hinf)) bad("histogram series without +Inf: " hk)
    if (!(hk in hcount)) bad("histogram series without _count: " hk)
    if (!(hk in hsum)) bad("histogram series without _sum: " hk)
  }
  exit errors > 0
}
