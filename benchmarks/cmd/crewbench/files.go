package main

import (
	"os"

	"gonum.org/v1/plot/vg/vgsvg"
)

// writeFile writes the SVG held by canvas to path.
func writeFile(path string, canvas *vgsvg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
