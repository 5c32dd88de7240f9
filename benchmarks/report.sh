# benchmarks/report.sh: the tables of scripts/bench's report, as shell
# functions over JSON-lines files (lockbench's, the peers', lock_variants');
# sourced by scripts/bench, and by benchmarks/check_report.sh, which feeds
# them rows of its own. Needs jq and awk; prints markdown on stdout.
# shellcheck shell=bash

# md_table: tab-separated rows (the first is the header) to an aligned
# markdown table; cells that look like numbers are right-aligned.
md_table() {
    awk -F'\t' '
    { for (i = 1; i <= NF; i++) { c[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) }
      if (NF > nf) nf = NF; nr = NR }
    END {
        for (i = 1; i <= nf; i++) {
            num[i] = nr > 1
            for (r = 2; r <= nr; r++) if (c[r, i] != "" && c[r, i] !~ /^[-+0-9.,\/x%() ]+$/) num[i] = 0
            if (w[i] < 3) w[i] = 3
        }
        for (r = 1; r <= nr; r++) {
            line = "|"
            for (i = 1; i <= nf; i++)
                line = line " " sprintf("%" (num[i] && r > 1 ? "" : "-") w[i] "s", c[r, i]) " |"
            print line
            if (r == 1) {
                line = "|"
                for (i = 1; i <= nf; i++) {
                    s = ""; for (k = 1; k < w[i]; k++) s = s "-"
                    line = line " " (num[i] ? s ":" : s "-") " |"
                }
                print line
            }
        }
    }'
}

# rss_map LOG: {"workload/clients": rss_kb} from lockbench's "done" lines.
rss_map() {
    awk '/^lockbench: done workload=/ {
            w = ""; c = ""; r = ""
            for (i = 1; i <= NF; i++) {
                split($i, kv, "=")
                if (kv[1] == "workload") w = kv[2]
                else if (kv[1] == "clients") c = kv[2]
                else if (kv[1] == "rss_kb") r = kv[2]
            }
            if (w != "memory" && r != "") m[w "/" c] = r
        }
        END { printf "{"; sep = ""; for (k in m) { printf "%s\"%s\":%s", sep, k, m[k]; sep = "," } print "}" }' "$1"
}

# jq helpers: workload order, fixed decimals.
# shellcheck disable=SC2016 # jq variables, not shell ones
jq_defs='
def order: {"uncontended":0,"contended":1,"independent":2,"rwlock":3,"semaphore":4,"floor":5,
             "threads":6}[.] // 9;
def r(n): if . == null then "-" else (. * pow(10; n) | round) as $v
    | (if $v < 0 then "-" else "" end) + (($v | fabs) / pow(10; n) | floor | tostring)
      + (if n > 0 then "." + (("0000000000" + (($v | fabs) % pow(10; n) | tostring))[-n:]) else "" end)
    end;
def rows: map(select(has("ops_per_s")));
def reqop: if .ops > 0 and .zk_requests >= 0 then .zk_requests / .ops | r(2) else "-" end;
'

# lockbench_table JSONL LOG: zklock's own rows, with resident memory after each.
lockbench_table() {
    local rss
    rss=$(rss_map "$2")
    jq -rs --argjson rss "$rss" "$jq_defs"'
        (["workload","clients","ops/s","zk req/op","acq p50 us","acq p99 us","rel p50 us",
          "rel p99 us","min/max client ops","errors","RSS after (MiB)"] | @tsv),
        (rows | sort_by([(.workload | order), .clients])[] |
         [.workload, .clients, (.ops_per_s | r(1)), reqop, .acquire_p50_us, .acquire_p99_us,
          .release_p50_us, .release_p99_us, "\(.min_client_ops)/\(.max_client_ops)", .errors,
          ($rss["\(.workload)/\(.clients)"] | if . == null then "-" else . / 1024 | r(1) end)]
         | map(tostring) | @tsv)' "$1" | md_table
}

# memory_table JSONL: the memory row, if any.
memory_table() {
    local rows
    rows=$(jq -rs "$jq_defs"'
        map(select(.workload == "memory"))[] |
        [.locks, .rss_kb_before, .rss_kb_after, (.kb_per_lock | r(2)),
         ((.rss_kb_after - .rss_kb_before) / 1024 | r(2)),
         (if .rss_kb_after - .rss_kb_before < 4096 then "yes" else "NO" end), .errors]
        | map(tostring) | @tsv' "$1")
    [[ -n "$rows" ]] || return 0
    { printf 'locks held\tRSS with client (kB)\tRSS holding all (kB)\tkB per lock\tbeyond client (MiB)\t< 4 MiB\terrors\n'
      printf '%s\n' "$rows"; } | md_table
}

# side_by_side JSONL...: every lib's rows, grouped by workload.
side_by_side() {
    cat "$@" | jq -rs "$jq_defs"'
        (["workload","clients","lib","ops/s","zk req/op","acq p50/p99 us","rel p50/p99 us",
          "min/max client ops","errors"] | @tsv),
        (rows | sort_by([(.workload | order), .clients, (.lib | startswith("zklock") | not), .lib])[] |
         [.workload, .clients, .lib, (.ops_per_s | r(1)), reqop,
          "\(.acquire_p50_us)/\(.acquire_p99_us)", "\(.release_p50_us)/\(.release_p99_us)",
          "\(.min_client_ops)/\(.max_client_ops)",
          (if .errors > 0 then "\(.errors) INVALID" else .errors end)] | map(tostring) | @tsv)' | md_table
}

# jq: from every row of one run, one object per zklock row: its ops/s and
# Curator's, the best valid peer's (rows with errors are invalid), the floor.
# shellcheck disable=SC2016 # jq variables, not shell ones
jq_ratio_defs='
def ratio_rows: rows as $all
    | ($all | map(select(.lib | startswith("zklock")))) as $z
    | ($z | map(select(.workload == "floor"))[0].ops_per_s) as $floor
    | $z | sort_by([(.workload | order), .clients, .lib])[] | . as $me
    | ($all | map(select(.workload == $me.workload and .clients == $me.clients
                         and .errors == 0 and (.lib | startswith("zklock") | not)))) as $peers
    | ($peers | map(select(.lib | startswith("curator")))[0]) as $cur
    | ($peers | max_by(.ops_per_s)) as $best
    | {workload: $me.workload, clients: $me.clients, lib: ($me.lib | sub("-[0-9][0-9.]*$"; "")),
       me: $me, cur: $cur, best: $best,
       x_cur: (if $cur then $me.ops_per_s / $cur.ops_per_s else null end),
       x_best: (if $best then $me.ops_per_s / $best.ops_per_s else null end),
       x_floor: (if $me.workload == "uncontended" and $floor then $me.ops_per_s / $floor else null end)};
'

# ratios JSONL...: zklock against Curator, the best peer, and (uncontended) the
# floor.
ratios() {
    cat "$@" | jq -rs "$jq_defs$jq_ratio_defs"'
        (["workload","clients","zklock","zklock ops/s","curator ops/s","zklock/curator","best peer",
          "zklock/best peer","zklock/floor","zklock req/op","curator req/op"] | @tsv),
        (ratio_rows
         | [.workload, .clients, .lib, (.me.ops_per_s | r(1)), (.cur.ops_per_s | r(1)), (.x_cur | r(2)),
            (if .best then "\(.best.lib) \(.best.ops_per_s | r(1))" else "-" end), (.x_best | r(2)),
            (if .x_floor then .x_floor | r(2) else "" end), (.me | reqop),
            (if .cur then (.cur | reqop) else "-" end)]
         | map(tostring) | @tsv)' | md_table
}

# ratios_by_round DIR...: one directory of JSON lines per round; the ratios of
# every round side by side, then their median.
ratios_by_round() {
    local d
    for d in "$@"; do
        cat "$d"/*.jsonl 2>/dev/null | jq -cs "$jq_defs$jq_ratio_defs"'ratio_rows
            | {workload, clients, lib, x_cur, x_best, x_floor}'
    done | jq -rs "$jq_defs"'
        def med: map(select(. != null)) | sort
            | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
              else (.[length / 2 - 1] + .[length / 2]) / 2 end;
        def each: map(r(2)) | join(" ");
        (["workload","clients","zklock","zklock/curator by round","median","zklock/best peer by round",
          "median","zklock/floor by round","median"] | @tsv),
        (group_by([(.workload | order), .clients, .lib])[]
         | [.[0].workload, .[0].clients, .[0].lib,
            (map(.x_cur) | each), (map(.x_cur) | med | r(2)),
            (map(.x_best) | each), (map(.x_best) | med | r(2)),
            (if .[0].workload == "uncontended" then (map(.x_floor) | each) else "" end),
            (if .[0].workload == "uncontended" then (map(.x_floor) | med | r(2)) else "" end)]
         | map(tostring) | @tsv)' | md_table
}

variants_table() {
    jq -rs "$jq_defs"'
        (["variant","N","handoffs/s","zk req/handoff","notif/handoff (client)",
          "notif/handoff (server)","acq p50 us","acq p99 us","min/max client ops","errors"] | @tsv),
        (.[] | select(has("variant")) |
         [.variant, .clients, (.handoffs_per_s | r(1)), (.requests_per_handoff | r(2)),
          (.notifications_per_handoff | r(2)),
          (if (.server_notifications_per_handoff // -1) < 0 then "-"
           else .server_notifications_per_handoff | r(2) end), .acquire_p50_us, .acquire_p99_us,
          "\(.min_client_ops)/\(.max_client_ops)", .errors] | map(tostring) | @tsv)' "$1" | md_table
}

# split_table JSONL: handoff_split's rows, one per library and line length:
# the server's part of a hand-off and the next holder's, and the hand-off
# rate they add up to.
split_table() {
    jq -rs "$jq_defs"'
        (["lib","sessions","hand-offs","server p50/mean us","client p50/mean us",
          "hand-off p50/mean us","hand-offs/s (1/mean)"] | @tsv),
        (sort_by(.sessions, .lib) | .[] | select(has("handoff_mean_us")) |
         [.lib, .sessions, .handoffs, "\(.server_p50_us)/\(.server_mean_us)",
          "\(.client_p50_us)/\(.client_mean_us)", "\(.handoff_p50_us)/\(.handoff_mean_us)",
          (if .handoff_mean_us > 0 then 1000000 / .handoff_mean_us | r(0) else "-" end)]
         | map(tostring) | @tsv)' "$1" | md_table
}

# jq: the median of numbers (nulls left out).
# shellcheck disable=SC2016
jq_med='
def med: map(select(. != null)) | sort
    | if length == 0 then null elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
'

# rounds_rows DIR...: every row of each round's directory, tagged with its round.
rounds_rows() {
    local d i=0
    for d in "$@"; do
        i=$((i + 1))
        cat "$d"/*.jsonl 2>/dev/null | jq -c --argjson round "$i" 'select(has("ops_per_s")) | . + {round: $round}'
    done
}

# scale_table DIR...: contended at each session count, one directory per
# round: every library's median ops/s, then zklock's own figures (medians
# over the rounds): its ratio to the best valid peer, its acquire p99 over
# p50, its client CPU per acquire; and below, per round, its rate and CPU
# at the largest count against the smallest.
scale_table() {
    rounds_rows "$@" | jq -rs "$jq_defs$jq_med"'
        map(select(.workload == "contended")) as $all
        | ($all | map(.lib | sub("-[0-9][0-9.]*$"; "")) | unique
           | sort_by(if startswith("zklock") then 0 else 1 end)) as $libs
        | (["sessions"] + ($libs | map("\(.) ops/s")) + ["zklock/best peer","zklock p99/p50",
           "zklock CPU us/acquire"] | @tsv),
          ($all | group_by(.clients)[] | . as $n
           | [$n[0].clients]
             + ($libs | map(. as $l | $n | map(select((.lib | sub("-[0-9][0-9.]*$"; "")) == $l
                 and .errors == 0) | .ops_per_s) | med | r(1)))
             + [($n | group_by(.round) | map(
                   (map(select(.lib | startswith("zklock")))[0]) as $z
                   | (map(select((.lib | startswith("zklock") | not) and .errors == 0))
                      | max_by(.ops_per_s)) as $b
                   | if $z and $b then $z.ops_per_s / $b.ops_per_s else null end) | med | r(2)),
                ($n | map(select(.lib | startswith("zklock")) | .acquire_p99_us / .acquire_p50_us)
                    | med | r(2)),
                ($n | map(select(.lib | startswith("zklock")) | .client_cpu_us_per_op) | med | r(0))]
           | map(tostring) | @tsv)' | md_table
    echo
    rounds_rows "$@" | jq -rs "$jq_defs$jq_med"'
        map(select(.workload == "contended" and (.lib | startswith("zklock"))))
        | (map(.clients) | min) as $lo | (map(.clients) | max) as $hi
        | group_by(.round) | map((map(select(.clients == $lo))[0]) as $a
            | (map(select(.clients == $hi))[0]) as $b
            | select($a and $b)
            | {rate: ($b.ops_per_s / $a.ops_per_s), cpu: ($b.client_cpu_us_per_op / $a.client_cpu_us_per_op)})
        | "zklock at \($hi) sessions against \($lo), by round: rate \(map(.rate | r(2)) | join(" ")) "
          + "(median \(map(.rate) | med | r(2))); client CPU per acquire \(map(.cpu | r(2)) | join(" ")) "
          + "(median \(map(.cpu) | med | r(2)))."'
}

# threads_table DIR...: the threads workload (one session, threads sharing
# one lock object), medians over the rounds; zklock's row with local
# hand-off on, and what its other clients saw in the same run.
threads_table() {
    rounds_rows "$@" | jq -rs "$jq_defs$jq_med"'
        map(select(.workload == "threads")) as $all
        | (["lib","threads","ops/s (median)","by round","acq p50/p99 us","errors"] | @tsv),
          ($all | group_by(.lib | sub("-[0-9][0-9.]*$"; ""))
           | sort_by(if .[0].lib | startswith("zklock") then 0 else 1 end)[]
           | [(.[0].lib | sub("-[0-9][0-9.]*$"; "")), .[0].clients,
              (map(select(.errors == 0) | .ops_per_s) | med | r(1)),
              (sort_by(.round) | map(.ops_per_s | r(0)) | join(" ")),
              "\(map(.acquire_p50_us) | med)/\(map(.acquire_p99_us) | med)",
              (map(.errors) | add)]
           | map(tostring) | @tsv)' | md_table
    echo
    rounds_rows "$@" | jq -rs "$jq_defs$jq_med"'
        map(select(.workload == "threads")) as $all
        | ($all | group_by(.round) | map(
            (map(select(.lib | startswith("zklock")))[0]) as $z
            | (map(select((.lib | startswith("zklock") | not) and .errors == 0)) | max_by(.ops_per_s)) as $b
            | if $z and $b then $z.ops_per_s / $b.ops_per_s else null end)) as $x
        | ($all | map(select(.lib | startswith("zklock")))) as $z
        | "zklock / best peer by round: \($x | map(r(1)) | join(" ")) (median \($x | med | r(1))). "
          + "Local hand-off bounds: \($z[0].local_handoff_max_streak // "-") holds or "
          + "\($z[0].local_handoff_max_ms // "-") ms a streak; \($z[0].remote_clients // 0) other "
          + "clients contended in the same runs: \($z | map(.remote_ops // 0) | add) holds, acquire "
          + "p50 \($z | map(.remote_acquire_p50_us // 0) | med | r(0)) us, worst wait "
          + "\($z | map(.remote_worst_wait_us // 0) | max / 1000 | r(1)) ms "
          + "(worst request latency at the server in those rows: "
          + "\($z | map(.server_max_latency_ms // -1) | max | if . < 0 then "-" else "\(.) ms" end)); "
          + "holds of the threads during any one wait of theirs: at most "
          + "\($z | map(.remote_worst_local_holds // -1) | max | if . < 0 then "-" else . end), over at most "
          + "\($z | map(.remote_worst_local_span_us // -1) | max | if . < 0 then "-" else "\(. / 1000 | r(1)) ms" end)"
          + " (the bound: one streak) "
          + "\(if ($z | all(.remote_worst_local_holds != null and .remote_worst_local_holds <= .local_handoff_max_streak
                         and .remote_worst_local_span_us <= 1000 * .local_handoff_max_ms))
               then "held" else "NOT held" end); "
          + "\($z | map(.local_handoffs // 0) | add) holds passed between threads."'
}
