package config

import (
	"reflect"
	"testing"
)

// The properties reader follows java.util.Properties.load.
func TestPropertiesCodec(t *testing.T) {
	in := "# comment\n" +
		"! also a comment\n" +
		"   \n" +
		"a=1\n" +
		"b = 2\n" +
		"c:3\n" +
		"d 4\n" +
		"  e\t=\t5  \n" + // leading space dropped, trailing kept (trimmed later by the parser)
		"f=x\\\n" +
		"    y\\\n" +
		"    z\n" +
		"g=ends with backslash\\\\\n" +
		"h\\=k=v\n" +
		"i=\\u0041\\tB\n" +
		"j=\n" +
		"k\n" +
		"a=last wins\r\n" +
		"l=https://x:1/#frag\n" +
		"# comment ending with backslash \\\n" +
		"m=after comment\n"
	got := map[string]any{}
	if err := (propertiesCodec{}).Decode([]byte(in), got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"a": "last wins", "b": "2", "c": "3", "d": "4", "e": "5  ", "f": "xyz", "g": "ends with backslash\\",
		"h=k": "v", "i": "A\tB", "j": "", "k": "", "l": "https://x:1/#frag", "m": "after comment",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Decode =\n%q\nwant\n%q", got, want)
	}
}
