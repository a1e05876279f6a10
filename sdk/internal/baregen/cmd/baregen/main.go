// Command baregen generates Go types and their BARE codecs from schema files; see the package
// doc of github.com/berthhq/berth/sdk/internal/baregen. It is run by go generate:
//
//	//go:generate go run ../../internal/baregen/cmd/baregen -package runner -o messages_gen.go 5=schema/v5.bare 6=schema/v6.bare
package main

import (
	"fmt"
	"os"

	"github.com/berthhq/berth/sdk/internal/baregen"
)

func main() {
	out, src, err := baregen.Run(".", os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, src, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "baregen:", err)
		os.Exit(1)
	}
}
