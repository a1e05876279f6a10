// Package ui is the engine's web dashboard at /ui: static HTML, CSS and JS embedded in the
// binary that read the public API (namespaces, runners, envoys, actors) and refresh live.
package ui
