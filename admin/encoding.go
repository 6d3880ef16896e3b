package admin

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Encoding is how record keys, values and header values are shown and read.
type Encoding string

// The encodings.
const (
	EncodingText   Encoding = "text"   // UTF-8 text
	EncodingJSON   Encoding = "json"   // JSON values as JSON, anything else as text
	EncodingHex    Encoding = "hex"    // lower-case hex
	EncodingBase64 Encoding = "base64" // standard base64
)

// ParseEncoding checks an encoding name.
func ParseEncoding(s string) (Encoding, error) {
	switch e := Encoding(strings.ToLower(s)); e {
	case EncodingText, EncodingJSON, EncodingHex, EncodingBase64:
		return e, nil
	}
	return "", fmt.Errorf("unknown encoding %q: want text, json, hex or base64", s)
}

// Show renders b for a JSON document: nil stays null; json embeds valid
// JSON as it is.
func (e Encoding) Show(b []byte) any {
	if b == nil {
		return nil
	}
	switch e {
	case EncodingHex:
		return hex.EncodeToString(b)
	case EncodingBase64:
		return base64.StdEncoding.EncodeToString(b)
	case EncodingJSON:
		if json.Valid(b) {
			var buf bytes.Buffer
			if json.Compact(&buf, b) == nil {
				return json.RawMessage(buf.Bytes())
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// Text renders b on one line for a table or a web page: control
// characters escaped, JSON compacted, null as "null".
func (e Encoding) Text(b []byte) string {
	if b == nil {
		return "null"
	}
	switch v := e.Show(b).(type) {
	case json.RawMessage:
		return string(v)
	case string:
		if e == EncodingText || e == EncodingJSON {
			return escapeControl(v)
		}
		return v
	}
	return ""
}

// escapeControl writes control characters as Go escapes so that a value
// stays on its line.
func escapeControl(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := fmt.Sprintf("%+q", string(r))
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Decode reads s (a key, value or header value given on the command line
// or in a JSON string) in the encoding.
func (e Encoding) Decode(s string) ([]byte, error) {
	switch e {
	case EncodingHex:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not hex: %v", err)
		}
		return b, nil
	case EncodingBase64:
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("not base64: %v", err)
		}
		return b, nil
	}
	return []byte(s), nil
}

// Header is a record header as shown.
type Header struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

// Record is a record as the CLI prints it and `produce --input json`
// reads it.
type Record struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"` // unix milliseconds
	Key       any      `json:"key"`
	Value     any      `json:"value"`
	Headers   []Header `json:"headers"`
}

// Show renders a fetched record in the encoding.
func (e Encoding) Record(r *kgo.Record) Record {
	out := Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
		Key: e.Show(r.Key), Value: e.Show(r.Value), Headers: []Header{}}
	for _, h := range r.Headers {
		out.Headers = append(out.Headers, Header{Key: h.Key, Value: e.Show(h.Value)})
	}
	return out
}

// HeadersText renders headers on one line: k=v,k2=v2.
func (e Encoding) HeadersText(hs []kgo.RecordHeader) string {
	var parts []string
	for _, h := range hs {
		parts = append(parts, escapeControl(h.Key)+"="+e.Text(h.Value))
	}
	return strings.Join(parts, ",")
}

// InputRecord is one line of `produce --input json`: key, value and header
// values are JSON strings (read in the encoding), other JSON values (taken
// as their JSON text) or null. It reads what Record prints: topic and offset
// are accepted and ignored (the command names the topic, the broker assigns
// offsets); partition and timestamp are kept.
type InputRecord struct {
	Topic     *string         `json:"topic"`
	Offset    *int64          `json:"offset"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Headers   []InputHeader   `json:"headers"`
	Partition *int32          `json:"partition"`
	Timestamp *int64          `json:"timestamp"`
}

// InputHeader is a header of an InputRecord.
type InputHeader struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// ParseInputRecord reads one JSON line into a kgo record.
func (e Encoding) ParseInputRecord(line []byte) (*kgo.Record, *int32, error) {
	var in InputRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, nil, fmt.Errorf("not a record object {\"key\":...,\"value\":...,\"headers\":[...]}: %v", err)
	}
	r := &kgo.Record{}
	var err error
	if r.Key, err = e.rawField(in.Key); err != nil {
		return nil, nil, fmt.Errorf("key: %v", err)
	}
	if r.Value, err = e.rawField(in.Value); err != nil {
		return nil, nil, fmt.Errorf("value: %v", err)
	}
	for _, h := range in.Headers {
		v, err := e.rawField(h.Value)
		if err != nil {
			return nil, nil, fmt.Errorf("header %q: %v", h.Key, err)
		}
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	if in.Timestamp != nil {
		r.Timestamp = time.UnixMilli(*in.Timestamp)
	}
	return r, in.Partition, nil
}

// rawField decodes one JSON field: a string in the encoding, null as nil,
// anything else as its JSON text.
func (e Encoding) rawField(raw json.RawMessage) ([]byte, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return e.Decode(s)
	}
	return []byte(raw), nil
}

// printable reports whether b is UTF-8 text without control characters
// other than white space (for the console's automatic view).
func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}
