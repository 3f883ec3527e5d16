# YCSB-C and YCSB-A per kv layout, 3-node in-process cluster: bars at the median of the
# runs, whiskers from the lowest to the highest run (ycsb.csv, from ycsb_ranges.py).
#   gnuplot ycsb.gp   (writes ycsb.png)
set terminal pngcairo size 1200,450 noenhanced
set output 'ycsb.png'
set datafile separator ','
set multiplot layout 1,2
set style fill solid 0.8 border -1
set boxwidth 0.18
set logscale y
set grid ytics
set xrange [-0.5:1.5]
set xtics ('YCSB-C (reads only)' 0, 'YCSB-A (half updates)' 1)
set key outside bottom center horizontal
w(s) = (s eq 'C') ? 0 : 1
x(s, k) = w(s) + (k - 1.5) * 0.2
layouts = 'hopscotch linear chained cuckoo'
set title 'throughput (median of 3 runs; whiskers: min-max)'
set ylabel 'operations/s (log scale)'
plot for [k=1:4] 'ycsb.csv' using (x(strcol(1), k-1)):(strcol(2) eq word(layouts, k) ? $5 : NaN):4:6:(0.18) \
     with boxerrorbars title word(layouts, k) lc k
set title 'READ p99 latency (median of 3 runs; whiskers: min-max)'
set ylabel 'us (log scale)'
plot for [k=1:4] 'ycsb.csv' using (x(strcol(1), k-1)):(strcol(2) eq word(layouts, k) ? $8 : NaN):7:9:(0.18) \
     with boxerrorbars title word(layouts, k) lc k
unset multiplot
