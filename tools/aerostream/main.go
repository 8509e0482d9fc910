package main

import (
	"os"

	"github.com/aerostream/aerostream/tools/cli"
)

func main() {
	os.Exit(cli.Run())
}
