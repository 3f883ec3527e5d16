set terminal pngcairo size 900,450
set output 'failover.png'
set datafile separator ','
set title 'Commits per 100 ms across a SIGKILL of one node (t = 0)'
set xlabel 'ms from the kill'
set ylabel 'commits per 100 ms'
set y2label 'p99 latency (ms)'
set y2tics
set ytics nomirror
set arrow from 0, graph 0 to 0, graph 1 nohead dashtype 2
plot 'failover.csv' using 1:2 with steps title 'all commits', \
     'failover.csv' using 1:3 with steps title "on the dead node's regions", \
     'failover.csv' using 1:4 axes x1y2 with lines title 'p99 latency'
