package shareconfig

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	b := DefaultBounds()
	cases := []struct {
		name  string
		props map[string]string
		want  string // substring of the error; "" for valid
	}{
		{"empty", nil, ""},
		{"defaults spelled out", map[string]string{SessionTimeoutMs: "45000", HeartbeatIntervalMs: "5000"}, ""},
		{"not a number", map[string]string{DeliveryCountLimit: "five"}, "not a number"},
		{"below atLeast", map[string]string{DeliveryCountLimit: "1"}, "at least 2"},
		{"below broker min", map[string]string{RecordLockDurationMs: "14999"}, "group.share.min.record.lock.duration.ms"},
		{"above broker max", map[string]string{RecordLockDurationMs: "60001"}, "group.share.max.record.lock.duration.ms"},
		{"delivery limit max", map[string]string{DeliveryCountLimit: "11"}, "group.share.max.delivery.count.limit"},
		{"record locks min", map[string]string{PartitionMaxRecordLocks: "99"}, "at least 100"},
		{"session below min", map[string]string{SessionTimeoutMs: "44999"}, "group.share.min.session.timeout.ms"},
		{"heartbeat above max", map[string]string{HeartbeatIntervalMs: "15001"}, "group.share.max.heartbeat.interval.ms"},
		{"bad reset", map[string]string{AutoOffsetReset: "none"}, "unknown strategy"},
		{"negative duration", map[string]string{AutoOffsetReset: "by_duration:-PT1H"}, "negative"},
		{"good duration", map[string]string{AutoOffsetReset: "by_duration:PT1H30M"}, ""},
		{"isolation", map[string]string{IsolationLevel: "READ_COMMITTED"}, "must be one of"},
		{"renew", map[string]string{RenewAcknowledgeEnable: "yes"}, "true or false"},
		{"other configs are not ours", map[string]string{"consumer.session.timeout.ms": "x"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Validate(c.props, b)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate = %v, want an ErrInvalid containing %q", err, c.want)
			}
		})
	}
}

// The session timeout must exceed the heartbeat interval, checked on the
// merged values (Kafka's validateValues).
func TestValidateSessionAboveHeartbeat(t *testing.T) {
	b := DefaultBounds()
	b.SessionTimeout = Range{1000, 60000, "min", "max"}
	err := Validate(map[string]string{SessionTimeoutMs: "5000", HeartbeatIntervalMs: "5000"}, b)
	if err == nil || !strings.Contains(err.Error(), "must be greater than "+HeartbeatIntervalMs) {
		t.Fatalf("Validate = %v", err)
	}
}

func TestEffectiveClampsAndDefaults(t *testing.T) {
	b := DefaultBounds()
	c := Effective(nil, b)
	want := Config{
		SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, RecordLockDuration: 30 * time.Second,
		DeliveryCountLimit: 5, PartitionMaxRecordLocks: 2000, AutoOffsetReset: Reset{Strategy: Latest}, RenewAcknowledge: true,
	}
	if c != want {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
	c = Effective(map[string]string{
		RecordLockDurationMs: "1000", DeliveryCountLimit: "50", AutoOffsetReset: "Earliest",
		IsolationLevel: ReadCommitted, RenewAcknowledgeEnable: "false", SessionTimeoutMs: "garbage",
	}, b)
	if c.RecordLockDuration != 15*time.Second || c.DeliveryCountLimit != 10 || c.AutoOffsetReset.Strategy != Earliest ||
		!c.ReadCommitted || c.RenewAcknowledge || c.SessionTimeout != 45*time.Second {
		t.Fatalf("effective = %+v", c)
	}
}

func TestDescribe(t *testing.T) {
	entries := Describe(map[string]string{DeliveryCountLimit: "3"}, DefaultBounds())
	if len(entries) != len(Names()) {
		t.Fatalf("%d entries, want %d", len(entries), len(Names()))
	}
	for _, e := range entries {
		switch e.Name {
		case DeliveryCountLimit:
			if e.Value != "3" || e.IsDefault {
				t.Fatalf("%+v", e)
			}
		case RecordLockDurationMs:
			if e.Value != "30000" || !e.IsDefault {
				t.Fatalf("%+v", e)
			}
		case AutoOffsetReset:
			if e.Value != "latest" {
				t.Fatalf("%+v", e)
			}
		}
		if !IsShareConfig(e.Name) {
			t.Fatalf("%s not a share config", e.Name)
		}
	}
	if IsShareConfig("consumer.session.timeout.ms") {
		t.Fatal("consumer config claimed")
	}
}

func TestParseAutoOffsetReset(t *testing.T) {
	cases := []struct {
		in   string
		want Reset
		err  bool
	}{
		{"latest", Reset{Strategy: Latest}, false},
		{" EARLIEST ", Reset{Strategy: Earliest}, false},
		{"by_duration:PT10M", Reset{ByDuration, 10 * time.Minute}, false},
		{"BY_DURATION:P1DT2H", Reset{ByDuration, 26 * time.Hour}, false},
		{"by_duration:PT0S", Reset{ByDuration, 0}, false},
		{"by_duration:", Reset{}, true},
		{"by_duration", Reset{}, true},
		{"by_duration:-PT1S", Reset{}, true},
		{"latest:PT1S", Reset{}, true},
		{"none", Reset{}, true},
		{"", Reset{}, true},
	}
	for _, c := range cases {
		got, err := ParseAutoOffsetReset(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("ParseAutoOffsetReset(%q) = %+v, %v; want %+v, err %v", c.in, got, err, c.want, c.err)
		}
	}
}

// Cases from java.time.Duration.parse's documentation.
func TestParseISODuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"PT20.345S", 20*time.Second + 345*time.Millisecond, false},
		{"PT15M", 15 * time.Minute, false},
		{"PT10H", 10 * time.Hour, false},
		{"P2D", 48 * time.Hour, false},
		{"P2DT3H4M", 51*time.Hour + 4*time.Minute, false},
		{"PT-6H3M", -6*time.Hour + 3*time.Minute, false},
		{"-PT6H3M", -6*time.Hour - 3*time.Minute, false},
		{"-PT-6H+3M", 6*time.Hour - 3*time.Minute, false},
		{"pt1,5s", 1500 * time.Millisecond, false},
		{"PT-0.5S", -500 * time.Millisecond, false},
		{"PT0.123456789S", 123456789, false},
		{"P1000000D", math.MaxInt64, false},
		{"P", 0, true},
		{"PT", 0, true},
		{"P1W", 0, true},
		{"PT1.1234567891S", 0, true},
		{"1H", 0, true},
		{"P1DT", 0, true},
	}
	for _, c := range cases {
		got, err := ParseISODuration(c.in)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("ParseISODuration(%q) = %v, %v; want %v, err %v", c.in, got, err, c.want, c.err)
		}
	}
}
