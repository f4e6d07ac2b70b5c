package abspath

import (
	"errors"
	"reflect"
	"testing"
)

// TestDir: relative paths are taken against the working directory, in
// whole flags, in file: items and in -k specs; absolute ones, names
// that are no path (refs, built-in workloads) and empty values stay.
func TestDir(t *testing.T) {
	d := Getwd(func() (string, error) { return "/home/u/pg", nil })
	for _, tc := range [][2]string{
		{d.Path("res/X"), "/home/u/pg/res/X"},
		{d.Path("../x"), "/home/u/x"},
		{d.Path("/abs/o"), "/abs/o"},
		{d.Path(""), ""},
		{d.Items("select1,file:my.sql, file:/a/b.sql"), "select1,file:/home/u/pg/my.sql,file:/a/b.sql"},
		{d.Items("checkpoint-storm=5,file:hold.sh"), "checkpoint-storm=5,file:/home/u/pg/hold.sh"},
		{d.Specs("master,mine=master+my.patch+/p/2.patch,pg=install:inst"), "master,mine=master+/home/u/pg/my.patch+/p/2.patch,pg=install:/home/u/pg/inst"},
		{d.Specs("a=HEAD~1"), "a=HEAD~1"},
	} {
		if tc[0] != tc[1] {
			t.Errorf("got %q, want %q", tc[0], tc[1])
		}
	}
	if got := d.Paths([]string{"a.patch", "/b.patch"}); !reflect.DeepEqual(got, []string{"/home/u/pg/a.patch", "/b.patch"}) || d.Paths(nil) != nil {
		t.Errorf("Paths: %q", got)
	}
	for _, getwd := range []func() (string, error){
		func() (string, error) { return "", errors.New("gone") },
		func() (string, error) { return "rel", nil },
		nil,
	} {
		if got := Getwd(getwd).Path("res/X"); got != "res/X" {
			t.Errorf("an unknown working directory: %q, want the path as given", got)
		}
	}
}
