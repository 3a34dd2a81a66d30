package main

import (
	"context"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slackask/slackask/asks"
	"github.com/slackask/slackask/bot"
	"github.com/slackask/slackask/dsh"
)

// roundTripper is a store that counts its round trips to the database
// (store/postgres's Store).
type roundTripper interface{ RoundTrips() int64 }

// metricsHandler serves Prometheus metrics: the lifecycle's and the Slack
// adapter's counters, whether Slack is connected, the store's round trips
// (PostgreSQL) and the Go runtime's.
func metricsHandler(svc *asks.Service, b *bot.Bot, bridge *dsh.Leased, st any, ready func(context.Context) error) http.Handler {
	reg := prometheus.NewRegistry()
	if rt, ok := st.(roundTripper); ok {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "slackask_store_round_trips_total",
			Help: "Round trips to the database (PostgreSQL): statements, and pipelined batches as one."},
			func() float64 { return float64(rt.RoundTrips()) }))
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	counter := func(name, help string, get func(asks.Counts) int64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "slackask_" + name, Help: help},
			func() float64 { return float64(get(svc.Counters())) }))
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "slackask_envelopes_total", Help: "Socket Mode envelopes received."},
		func() float64 { return float64(b.Envelopes()) }))
	counter("slack_posts_total", "Messages posted (chat.postMessage).", func(c asks.Counts) int64 { return c.Posts })
	counter("slack_updates_total", "Messages updated (chat.update).", func(c asks.Counts) int64 { return c.Updates })
	counter("asks_created_total", "Asks created.", func(c asks.Counts) int64 { return c.Created })
	counter("corrupt_records_left_out_total", "Stored asks that do not decode, left out of a read of many (each time they were).",
		func(c asks.Counts) int64 { return c.CorruptLeftOut })
	ended := prometheus.NewDesc("slackask_asks_ended_total", "Asks ended, by outcome.", []string{"status"}, nil)
	reg.MustRegister(endedCollector{svc: svc, desc: ended})
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slackask_ready", Help: "1 when Slack (and the dsh bridge, if on) is connected."},
		func() float64 {
			if ready(context.Background()) == nil {
				return 1
			}
			return 0
		}))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slackask_socket_connections", Help: "Socket Mode connections up (Slack said hello, still open)."},
		func() float64 { return float64(b.Connected()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slackask_socket_connections_kept", Help: "Socket Mode connections this process keeps (SLACKASK_SOCKET_CONNECTIONS)."},
		func() float64 { return float64(b.Sockets()) }))
	if bridge != nil {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "slackask_dsh_bridge_holder", Help: "1 when this replica holds the dsh bridge's lease and runs the bridge."},
			func() float64 {
				if bridge.Holding() {
					return 1
				}
				return 0
			}))
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

type endedCollector struct {
	svc  *asks.Service
	desc *prometheus.Desc
}

func (e endedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- e.desc }

func (e endedCollector) Collect(ch chan<- prometheus.Metric) {
	c := e.svc.Counters()
	for status, n := range map[string]int64{"answered": c.Answered, "cancelled": c.Cancelled, "aborted": c.Aborted, "expired": c.Expired} {
		ch <- prometheus.MustNewConstMetric(e.desc, prometheus.CounterValue, float64(n), status)
	}
}
