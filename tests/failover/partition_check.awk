# The checks of partition_test.sh over one phase's histories (see that file for the
# record formats). Variables: K (the victim), cut and healt (µs), lease and recover
# (bounds, µs), nkeys, nhot, ph (the phase), h0 and h1 (the healthy nodes read back).
# Prints "FAIL: ...", "WARN: ...", "INFO: ..." and "TIME ..." lines. mawk-compatible.

function rel(t) { return sprintf("%+.0f ms", (t - cut) / 1000) }
function relh(t) { return sprintf("heal%+.0f ms", (t - healt) / 1000) }
function when(t) { return t < healt ? "cut" rel(t) : relh(t) }
function report(kind, cat, msg) {
  nrep[kind, cat]++
  if (nrep[kind, cat] <= 8) print kind ": " msg
  else if (nrep[kind, cat] == 9) print kind ": ... (more of these: see the end)"
}
function vidx(v,   p) {  # init-<i> -> 0, w<W>-<a> -> a, ks<phase>-<n> -> n
  p = index(v, "-")
  if (substr(v, 1, 5) == "init-") return 0
  return substr(v, p + 1) + 0
}
function hotkey(k,   n) {
  if (substr(k, 1, length(pre)) != pre) return 0
  n = substr(k, length(pre) + 1) + 0
  return n >= 1 && n <= nhot ? n : 0
}
function basekey(k,   n) {
  if (substr(k, 1, length(pre)) != pre) return 0
  n = substr(k, length(pre) + 1)
  return n ~ /^[0-9]+$/ ? n + 0 : 0
}
# The newest value of k whose SET was acknowledged before time t (index, -1 if none).
function acked_before(k, t,   i, m) {
  m = -1
  for (i = 1; i <= nok[k]; i++) if (okend[k, i] < t && okidx[k, i] > m) { m = okidx[k, i]; mv = okval[k, i]; me = okend[k, i] }
  return m
}

# How long a healthy write may take before it counts as stalled (µs): twice the longest
# OK write of the regular writers that ended before t, and at least 300 ms.
function stall_us(t,   i, m) {
  m = 0
  for (i = 1; i <= nw; i++) if (wE[i] < t && wC[i] == "OK" && wE[i] - wS[i] > m) m = wE[i] - wS[i]
  return 2 * m > 300000 ? 2 * m : 300000
}

BEGIN { pre = "p" ph ":k:" }

$1 == "W" {
  v = $7; wkey[v] = $6; wst[v] = $8; ws[v] = $4; we[v] = $5
  if ($2 == "s") { nsl++; slS[nsl] = $4; slE[nsl] = $5; slC[nsl] = $8; slN = $3; next }
  nw++; wS[nw] = $4; wE[nw] = $5; wC[nw] = $8; wK[nw] = $6; wV[nw] = v; wM[nw] = $9
  if ($8 == "OK") { n = ++nok[$6]; okend[$6, n] = $5; okidx[$6, n] = vidx(v); okval[$6, n] = v
    if (vidx(v) > lastok[$6]) { lastok[$6] = vidx(v); lastokv[$6] = v } }
  next
}
$1 == "R" { nr++; rW[nr] = $2; rN[nr] = $3; rS[nr] = $4; rE[nr] = $5; rK[nr] = $6; rC[nr] = $7; rM[nr] = $8; next }
$1 == "KS" { nk++; kS[nk] = $3; kE[nk] = $4; kK[nk] = $5; kV[nk] = $6; kC[nk] = $7; kM[nk] = $8; next }
$1 == "C" {
  cfg = $4 "|" $5
  if (($3 in ecfg) && ecfg[$3] != cfg)
    report("FAIL", "split", sprintf("split brain: epoch %s seen as manager|members %s and %s (at %s)", $3, ecfg[$3], cfg, when($2)))
  ecfg[$3] = cfg; emembers[$3] = "," $5 ","
  if ($3 + 0 < maxepoch) report("FAIL", "back", sprintf("ZooKeeper's configuration went back from epoch %d to %d (at %s)", maxepoch, $3, when($2)))
  if ($3 + 0 > maxepoch) { maxepoch = $3 + 0 }
  lastcfg = cfg; lastepoch = $3
  if ($2 >= cut && index("," $5 ",", "," K ",") == 0 && t_nok == "") t_nok = $2
  if ($2 >= healt && index("," $5 ",", "," K ",") > 0 && t_back == "" && t_nok != "") t_back = $2
  next
}
$1 == "S" { ns++; sT[ns] = $2; sI[ns] = $3; sN[ns] = $4; sE[ns] = $5; sV[ns] = $6; sM[ns] = $7; next }
$1 == "F" { fin[$2, $3] = $4 " " $5; fcls[$2, $3] = $4; fval[$2, $3] = $5; next }

END {
  # ---- reads: staleness everywhere; K silent from cut+lease until the heal.
  kfirst_err = ""; klast_val = ""
  for (i = 1; i <= nr; i++) {
    k = rK[i]; s = rS[i]; e = rE[i]; node = rN[i]; isK = (node == K)
    win = s < cut ? "pre" : (s < healt ? "cut" : "heal")
    cnt[isK ? "K" : "H", win, rC[i]]++
    if (!hotkey(k)) continue
    if (rC[i] == "NIL") {
      report("FAIL", "nil", sprintf("GET %s on node %s (%s) answered nil at %s: the key was written before the test began", k, node, rW[i], when(s)))
      continue
    }
    if (isK && rC[i] == "ERR" && s >= cut && s < healt && kfirst_err == "") { kfirst_err = e; kfirst_msg = rM[i] }
    if (rC[i] != "VAL") continue
    v = rM[i]
    if (isK && s >= cut && s < healt) { if (klast_val == "" || s > klast_val) { klast_val = s; klast_vale = e } }
    if (isK && s >= cut + lease && s < healt)
      report("FAIL", "lease", sprintf("node %s (cut off) answered GET %s with data (%s) at %s, after its lease must have ended (cut%+.0f ms)", K, k, v, when(s), lease / 1000))
    if (v ~ /^init-/) {
      if (v != "init-" hotkey(k)) { report("FAIL", "wrong", sprintf("GET %s on node %s returned %s, a value of another key", k, node, v)); continue }
    } else if (!(v in wkey) || wkey[v] != k) {
      report("FAIL", "wrong", sprintf("GET %s on node %s returned %s, which no SET of this key wrote", k, node, v)); continue
    }
    m = acked_before(k, s)
    if (vidx(v) < m) {
      if ((v in wst) && wst[v] == "TIMEOUT") { ambiguous++; continue }
      report("FAIL", "stale" (isK ? "K" : "H"), sprintf("STALE READ: GET %s on node %s%s sent at %s returned %s, but %s had been acknowledged at %s", k, node, isK ? " (the victim)" : "", when(s), v, mv, when(me)))
    }
  }
  if (cnt["K", "pre", "VAL"] == 0) report("FAIL", "sanity", sprintf("node %s answered no GET with data before the cut: the test checks nothing", K))

  # ---- healthy writes: all OK before the cut; working again within the bound.
  # A write that failed, or stalled: took longer than stall_us, twice the slowest one
  # before the cut and at least 300 ms. (A write here is a redis-cli process started in
  # the node's namespace: on a slow machine the spawns alone take a few hundred ms.)
  stall = stall_us(cut)
  lastbad = ""; firstbad = ""
  for (i = 1; i <= nw; i++) {
    if (wE[i] < cut) {  # ended before the cut: the cluster was whole
      if (wC[i] == "TIMEOUT") report("WARN", "precut", sprintf("SET %s %s through a healthy node got no reply within 1 s before the cut (a loaded machine?)", wK[i], wV[i]))
      else if (wC[i] != "OK") report("FAIL", "precut", sprintf("SET %s %s through a healthy node failed before the cut: %s %s", wK[i], wV[i], wC[i], wM[i]))
      continue
    }
    if (wS[i] < cut) continue  # in flight at the cut
    if (wS[i] >= healt) continue
    bad = wC[i] != "OK" || wE[i] - wS[i] > stall
    if (bad) { if (lastbad == "" || wE[i] > lastbad) lastbad = wE[i]; if (firstbad == "" || wS[i] < firstbad) firstbad = wS[i]; nbad++ }
    cntw[wC[i]]++
  }
  okagain = ""
  for (i = 1; i <= nw; i++) if (wS[i] >= cut && wS[i] < healt && wC[i] == "OK" && (lastbad == "" || wS[i] >= lastbad) && (okagain == "" || wE[i] < okagain)) okagain = wE[i]
  if (lastbad != "" && lastbad - cut > recover) report("FAIL", "recover", sprintf("healthy writes still failed or stalled at %s, more than %.0f s after the cut", when(lastbad), recover / 1e6))
  if (okagain == "") report("FAIL", "recover", "no healthy write succeeded after the last failed one before the heal")

  # ---- K's SETs.
  for (i = 1; i <= nk; i++) {
    s = kS[i]; win = s < cut ? "pre" : (s < healt ? "cut" : "heal")
    cntk[win, kC[i]]++
    a = fcls[h0, kK[i]]; b = fcls[h1, kK[i]]; va = fval[h0, kK[i]]; vb = fval[h1, kK[i]]
    visible = (a == "VAL" && va == kV[i]) || (b == "VAL" && vb == kV[i])
    if (kC[i] == "OK") {
      if (s >= cut + lease && s < healt)
        report("FAIL", "kcommit", sprintf("node %s (cut off) acknowledged SET %s %s sent at %s, after its lease must have ended", K, kK[i], kV[i], when(s)))
      if (!(a == "VAL" && va == kV[i] && b == "VAL" && vb == kV[i]))
        report("FAIL", "klost", sprintf("LOST WRITE: node %s acknowledged SET %s %s (sent at %s) but nodes %s/%s read %s / %s", K, kK[i], kV[i], when(s), h0, h1, fin[h0, kK[i]], fin[h1, kK[i]]))
    } else if (kC[i] == "ERR" || kC[i] == "CONN") {
      if (visible) report("FAIL", "kerr", sprintf("node %s refused SET %s %s (sent at %s: %s) but the value is visible: %s / %s", K, kK[i], kV[i], when(s), kM[i], fin[h0, kK[i]], fin[h1, kK[i]]))
    } else if (visible) {  # no reply within 1 s, and committed after all
      kzombie[win]++
      if (win != "cut") continue
      # Sent once K's lease had ended: K had to refuse it, and it committed anyway.
      if (s >= cut + lease)
        report("FAIL", "kzombie", sprintf("COMMIT BY A FENCED NODE: SET %s %s sent to node %s while it was cut off and fenced (at %s) got no reply, and committed later: nodes %s/%s read %s / %s", kK[i], kV[i], K, when(s), h0, h1, fin[h0, kK[i]], fin[h1, kK[i]]))
      else
        report("WARN", "kinflight", sprintf("SET %s %s sent to node %s just after the cut (at %s, within its lease) got no reply, and committed later", kK[i], kV[i], K, when(s)))
    }
  }

  # ---- everything reads back through two healthy nodes.
  for (i = 1; i <= nkeys; i++) {
    k = pre i
    a = fin[h0, k]; b = fin[h1, k]
    if (a != b) {
      # A SET that timed out may still commit between the two reads.
      if (wst[fval[h0, k]] == "TIMEOUT" || wst[fval[h1, k]] == "TIMEOUT") report("WARN", "differ", sprintf("nodes %s and %s read %s differently (%s / %s), one a SET that had timed out", h0, h1, k, a, b))
      else report("FAIL", "differ", sprintf("nodes %s and %s disagree on %s: %s / %s", h0, h1, k, a, b))
    }
    for (j = 0; j < 2; j++) {
      n = j == 0 ? h0 : h1
      c = fcls[n, k]; v = fval[n, k]
      if (i > nhot) {
        if (c != "VAL" || v != "init-" i) report("FAIL", "final", sprintf("node %s reads %s as %s %s, expected init-%d (never written since)", n, k, c, v, i))
        continue
      }
      if (c != "VAL") { report("FAIL", "final", sprintf("node %s reads %s as %s %s after the test", n, k, c, v)); continue }
      if (v !~ /^init-/ && (!(v in wkey) || wkey[v] != k)) { report("FAIL", "final", sprintf("node %s reads %s as %s, which no SET of this key wrote", n, k, v)); continue }
      if (vidx(v) < lastok[k] + 0 && wst[v] == "TIMEOUT")
        report("WARN", "lateH", sprintf("node %s reads %s as %s, a SET that had timed out and committed after %s was acknowledged", n, k, v, lastokv[k]))
      else if (vidx(v) < lastok[k] + 0)
        report("FAIL", "lostH", sprintf("LOST WRITE: node %s reads %s as %s after the test, but %s was acknowledged at %s", n, k, v, lastokv[k], when(we[lastokv[k]])))
      else if (vidx(v) > lastok[k] + 0 && wst[v] == "ERR")
        report("WARN", "herr", sprintf("node %s reads %s as %s, whose SET was answered with an error", n, k, v))
    }
  }
  for (v in wst) {
    k = wkey[v]
    if (index(k, ":ph") == 0 && index(k, ":slow") == 0) continue
    for (j = 0; j < 2; j++) {
      n = j == 0 ? h0 : h1
      if (wst[v] == "OK" && !(fcls[n, k] == "VAL" && fval[n, k] == v))
        report("FAIL", "lostph", sprintf("LOST WRITE: SET %s %s (after the heal) was acknowledged but node %s reads %s", k, v, n, fin[n, k]))
    }
  }

  # ---- admin stats: one serving manager; nobody serves in an epoch that does not list it.
  for (i = 1; i <= ns; i++) {
    if (sV[i] != "yes") continue
    if (sM[i] == "yes") { mgrs[sI[i]]++; mgrlist[sI[i]] = mgrlist[sI[i]] " " sN[i] }
    if ((sE[i] in emembers) && index(emembers[sE[i]], "," sN[i] ",") == 0)
      report("FAIL", "outsider", sprintf("node %s reports serving in epoch %s, whose configuration (%s) does not list it (at %s)", sN[i], sE[i], ecfg[sE[i]], when(sT[i])))
    lastsample = sI[i]
  }
  for (x in mgrs) if (mgrs[x] > 1) report("FAIL", "twomgr", sprintf("split brain: nodes%s all report serving as configuration manager in one stats sample", mgrlist[x]))
  if (t_nok == "") report("FAIL", "noremove", sprintf("no configuration without node %s was seen after the cut", K))
  # The end: every member serves in the newest epoch.
  split(lastcfg, lc, "|")
  nm = split(lc[2], lm, ",")
  for (i = 1; i <= ns; i++) if (sI[i] == lastsample) { lastE[sN[i]] = sE[i]; lastV[sN[i]] = sV[i] }
  for (j = 1; j <= nm; j++) if (lastE[lm[j]] != lastepoch || lastV[lm[j]] != "yes")
    report("FAIL", "settle", sprintf("at the end node %s reports epoch %s serving %s; the configuration is epoch %s (%s)", lm[j], lastE[lm[j]], lastV[lm[j]], lastepoch, lastcfg))

  # ---- the summary.
  printf "INFO: node %s's GETs: before the cut %d data; while cut off %d data, %d refused, %d hung; after the heal %d data, %d refused, %d hung\n", K,
    cnt["K", "pre", "VAL"], cnt["K", "cut", "VAL"], cnt["K", "cut", "ERR"], cnt["K", "cut", "TIMEOUT"], cnt["K", "heal", "VAL"], cnt["K", "heal", "ERR"], cnt["K", "heal", "TIMEOUT"]
  printf "INFO: node %s's SETs: before the cut %d ok; while cut off %d ok, %d refused, %d hung (%d of them committed later); after the heal %d ok, %d refused, %d hung\n", K,
    cntk["pre", "OK"], cntk["cut", "OK"], cntk["cut", "ERR"], cntk["cut", "TIMEOUT"], kzombie["cut"], cntk["heal", "OK"], cntk["heal", "ERR"], cntk["heal", "TIMEOUT"]
  printf "INFO: healthy nodes' GETs while K was cut off: %d data, %d refused, %d hung; after the heal %d data, %d refused, %d hung\n",
    cnt["H", "cut", "VAL"], cnt["H", "cut", "ERR"], cnt["H", "cut", "TIMEOUT"], cnt["H", "heal", "VAL"], cnt["H", "heal", "ERR"], cnt["H", "heal", "TIMEOUT"]
  printf "INFO: healthy SETs while K was cut off: %d ok, %d refused, %d hung; %d failed or took over %.0f ms (twice the slowest before the cut, at least 300)\n", cntw["OK"], cntw["ERR"], cntw["TIMEOUT"], nbad, stall / 1000
  if (ambiguous) printf "INFO: %d reads returned the value of a SET that had timed out (ambiguous, not counted as stale)\n", ambiguous
  if (klast_val != "") printf "TIME cut -> K's last GET answered with data while cut off: sent %s, answered %s\n", rel(klast_val), rel(klast_vale)
  else print "TIME cut -> K's last GET answered with data while cut off: none after the cut"
  if (kfirst_err != "") printf "TIME cut -> K's first GET refused with an error:       %s (%s)\n", rel(kfirst_err), substr(kfirst_msg, 1, 60)
  if (t_nok != "") printf "TIME cut -> farm_admin config shows a configuration without K: %s\n", rel(t_nok)
  if (lastbad != "") printf "TIME cut -> healthy writes succeed again:             %s (failed or >%.0f ms SETs from %s to %s)\n", rel(okagain), stall / 1000, rel(firstbad), rel(lastbad)
  else print "TIME cut -> healthy writes succeed again:             they never failed or stalled"
  # The slow writer (12 s bound): its SET in flight at the cut, or else its first one after.
  for (i = 1; i <= nsl; i++) if (slE[i] >= cut) {
    printf "TIME a SET sent %s (through node %s, 12 s bound) ended:  %s (%s)\n", rel(slS[i]), slN, rel(slE[i]), slC[i] == "TIMEOUT" ? "no reply within 12 s" : slC[i]
    break
  }
  if (t_back != "") printf "TIME heal -> farm_admin config lists K again:          %+.0f ms\n", (t_back - healt) / 1000
  for (x in nrep) {
    split(x, xx, SUBSEP)
    if (xx[1] == "FAIL") nfail += nrep[x]; else nwarn += nrep[x]
    if (nrep[x] > 8) printf "NOTE: %d %s lines of kind '%s' in all\n", nrep[x], xx[1], xx[2]
  }
  printf "TOTAL %d %d\n", nfail, nwarn
}
