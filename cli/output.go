package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// printer writes a command's result as aligned tables or as JSON.
type printer struct {
	w    io.Writer
	json bool
}

// JSON writes v as one indented JSON document.
func (p *printer) JSON(v any) error {
	enc := json.NewEncoder(p.w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Line writes v as one compact JSON line (streams: produce, consume).
func (p *printer) Line(v any) error {
	return json.NewEncoder(p.w).Encode(v)
}

// result writes v as JSON, or calls table to print it for a terminal.
func (p *printer) result(v any, table func(*printer)) error {
	if p.json {
		return p.JSON(v)
	}
	table(p)
	return nil
}

// Table writes rows under headers, columns aligned.
func (p *printer) Table(headers []string, rows [][]string) {
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(headers, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// Fields writes name: value lines, names aligned.
func (p *printer) Fields(pairs ...string) {
	tw := tabwriter.NewWriter(p.w, 0, 4, 1, ' ', 0)
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(tw, "%s:\t%s\n", pairs[i], pairs[i+1])
	}
	tw.Flush()
}

// Section writes a blank line and a title before a table.
func (p *printer) Section(title string) { fmt.Fprintf(p.w, "\n%s\n", title) }

// ids prints broker ids as 1,2,3.
func ids(v []int32) string {
	parts := make([]string, len(v))
	for i, id := range v {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, ",")
}

// offset prints an offset, "-" when unknown.
func offset(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}

// count prints a count, "-" when unknown (negative).
func count[T ~int32 | ~int16](n T) string {
	if n < 0 {
		return "-"
	}
	return itoa(n)
}

func itoa[T ~int | ~int32 | ~int64 | ~int16](n T) string { return strconv.FormatInt(int64(n), 10) }

// outcome is a result's status column: ok, or "failed" with an error.
func outcome(errText, ok string) string {
	if errText != "" {
		return "failed"
	}
	return ok
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
