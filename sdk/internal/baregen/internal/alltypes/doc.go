// Package alltypes is generated from a schema with every BARE type in two versions, for the
// tests of baregen: alltypes_test.go checks the encoding of each against the BARE spec.
package alltypes

//go:generate go run ../../cmd/baregen -package alltypes -o alltypes_gen.go 1=schema/v1.bare 2=schema/v2.bare
