package main

import (
	"github.com/urfave/cli/v3"
)

func buildFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "build", Aliases: []string{"b", "build-type"}, Usage: "build and install: `TYPE` release, debug or debug_noassert"},
		&cli.StringSliceFlag{Name: "meson-opt", Usage: "extra meson `OPTION` such as -Dfoo=bar (repeatable)"},
		&cli.StringSliceFlag{Name: "configure-opt", Usage: "extra configure `OPTION` for trees without meson.build (repeatable)"},
		&cli.BoolFlag{Name: "profiling", Usage: "keep frame pointers and symbols, so perf records call graphs"},
		&cli.BoolFlag{Name: "no-ccache", Usage: "build without ccache"},
		&cli.BoolFlag{Name: "force", Usage: "rebuild even when nothing changed"},
	}
}

// buildFlag is switch's build flag name, for another command.
func buildFlag(name string) cli.Flag {
	for _, f := range buildFlags() {
		if f.Names()[0] == name {
			return f
		}
	}
	panic("no build flag " + name)
}
