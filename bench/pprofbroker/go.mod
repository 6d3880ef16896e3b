module github.com/kbroker/kbroker/bench/pprofbroker

go 1.26.0
