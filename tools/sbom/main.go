// Command sbom writes a software bill of materials, an SPDX 2.3 JSON document, for each Go
// binary it is given, from the build information the Go toolchain records in the binary
// (the main module, every module compiled in with its version and checksum, the Go version
// and the build settings). `make release` runs it on each binary it builds:
//
//	go run ./tools/sbom -out dist -version v1.0.0 dist/berth-v1.0.0-linux-amd64/berth:berth-v1.0.0-linux-amd64
//
// writes dist/berth-v1.0.0-linux-amd64.spdx.json. SOURCE_DATE_EPOCH, when set, is the
// document's creation time, so that a rebuild writes the same document.
package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

func main() {
	out := flag.String("out", ".", "folder the documents are written to")
	version := flag.String("version", "", "the binaries' version, when Go recorded none (a build in a work tree records \"(devel)\")")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: sbom [-out DIR] BINARY[:NAME]...\nwrites DIR/NAME.spdx.json (NAME defaults to the binary's file name)")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	created, err := creationTime(os.Getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sbom:", err)
		os.Exit(2)
	}
	for _, arg := range flag.Args() {
		bin, name, ok := strings.Cut(arg, ":")
		if !ok {
			name = filepath.Base(bin)
		}
		if err := write(bin, name, *version, filepath.Join(*out, name+".spdx.json"), created); err != nil {
			fmt.Fprintln(os.Stderr, "sbom:", err)
			os.Exit(1)
		}
	}
}

// creationTime is SOURCE_DATE_EPOCH (seconds) when set, else now.
func creationTime(epoch string) (time.Time, error) {
	if epoch == "" {
		return time.Now().UTC().Truncate(time.Second), nil
	}
	s, err := strconv.ParseInt(epoch, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q: %w", epoch, err)
	}
	return time.Unix(s, 0).UTC(), nil
}

// write reads bin's build information and writes its document to path.
func write(bin, name, version, path string, created time.Time) error {
	doc, err := Generate(bin, name, version, created)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Document is the part of an SPDX 2.3 document this tool writes.
type Document struct {
	SPDXVersion       string         `json:"spdxVersion"`
	DataLicense       string         `json:"dataLicense"`
	SPDXID            string         `json:"SPDXID"`
	Name              string         `json:"name"`
	DocumentNamespace string         `json:"documentNamespace"`
	CreationInfo      CreationInfo   `json:"creationInfo"`
	Packages          []Package      `json:"packages"`
	Relationships     []Relationship `json:"relationships"`
}

// CreationInfo says when and by what the document was made.
type CreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

// Package is one module (or the Go standard library) in the binary.
type Package struct {
	Name             string        `json:"name"`
	SPDXID           string        `json:"SPDXID"`
	VersionInfo      string        `json:"versionInfo,omitempty"`
	DownloadLocation string        `json:"downloadLocation"`
	FilesAnalyzed    bool          `json:"filesAnalyzed"`
	LicenseConcluded string        `json:"licenseConcluded"`
	LicenseDeclared  string        `json:"licenseDeclared"`
	CopyrightText    string        `json:"copyrightText"`
	Checksums        []Checksum    `json:"checksums,omitempty"`
	ExternalRefs     []ExternalRef `json:"externalRefs,omitempty"`
	PrimaryPurpose   string        `json:"primaryPackagePurpose,omitempty"`
	Comment          string        `json:"comment,omitempty"`
}

// Checksum is a digest of a package: the binary's SHA256, or a module's go.sum hash.
type Checksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

// ExternalRef names a package for tools, here by its package URL.
type ExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

// Relationship links two elements of the document.
type Relationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID makes an element id from a module path and version.
func spdxID(parts ...string) string {
	return "SPDXRef-Package-" + strings.Trim(idUnsafe.ReplaceAllString(strings.Join(parts, "-"), "-"), "-")
}

// purl is the package URL of a Go module.
func purl(path, version string) string {
	s := "pkg:golang/" + path
	if version != "" {
		s += "@" + version
	}
	return s
}

// Generate builds the document of the Go binary bin, named name; version is the main module's
// when the binary records none.
func Generate(bin, name, version string, created time.Time) (*Document, error) {
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("%s: no Go build information: %w", bin, err)
	}
	f, err := os.Open(bin)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	digest := hex.EncodeToString(h.Sum(nil))

	doc := &Document{
		SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: name,
		DocumentNamespace: "https://github.com/berthhq/berth/spdx/" + url(name) + "-" + digest,
		CreationInfo:      CreationInfo{Created: created.Format(time.RFC3339), Creators: []string{"Tool: berth-tools-sbom"}},
	}
	var settings []string
	for _, s := range info.Settings {
		settings = append(settings, s.Key+"="+s.Value)
	}
	mainVersion := info.Main.Version
	if mainVersion == "(devel)" || mainVersion == "" {
		mainVersion = version
	}
	root := Package{
		Name: info.Main.Path, SPDXID: spdxID("main", info.Path), VersionInfo: mainVersion,
		DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		CopyrightText: noAssertion, PrimaryPurpose: "APPLICATION",
		Checksums:    []Checksum{{Algorithm: "SHA256", Value: digest}},
		ExternalRefs: []ExternalRef{{"PACKAGE-MANAGER", "purl", purl(info.Main.Path, mainVersion)}},
		Comment:      "The binary " + filepath.Base(bin) + ", package " + info.Path + ", built with " + info.GoVersion + "; build settings: " + strings.Join(settings, " "),
	}
	doc.Packages = append(doc.Packages, root)
	doc.Relationships = append(doc.Relationships, Relationship{"SPDXRef-DOCUMENT", "DESCRIBES", root.SPDXID})

	add := func(p Package) {
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, Relationship{root.SPDXID, "DEPENDS_ON", p.SPDXID})
	}
	add(Package{
		Name: "stdlib", SPDXID: spdxID("stdlib", info.GoVersion), VersionInfo: info.GoVersion,
		DownloadLocation: "https://go.dev/dl/", LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		CopyrightText: noAssertion, PrimaryPurpose: "LIBRARY",
		ExternalRefs: []ExternalRef{{"PACKAGE-MANAGER", "purl", purl("stdlib", info.GoVersion)}},
	})
	for _, d := range info.Deps {
		add(module(d))
	}
	return doc, nil
}

// module is the package of a dependency; a replaced module is described by its replacement.
func module(d *debug.Module) Package {
	p := Package{
		Name: d.Path, SPDXID: spdxID(d.Path, d.Version), VersionInfo: d.Version,
		DownloadLocation: noAssertion, LicenseConcluded: noAssertion, LicenseDeclared: noAssertion,
		CopyrightText: noAssertion, PrimaryPurpose: "LIBRARY",
	}
	used := d
	if d.Replace != nil {
		used = d.Replace
		p.Comment = "replaced by " + d.Replace.Path
		if d.Replace.Version != "" {
			p.Comment += " " + d.Replace.Version
		}
	}
	if used.Version != "" && !strings.HasPrefix(used.Path, ".") && !strings.HasPrefix(used.Path, "/") {
		p.DownloadLocation = "https://proxy.golang.org/" + used.Path + "/@v/" + used.Version + ".zip"
		p.ExternalRefs = []ExternalRef{{"PACKAGE-MANAGER", "purl", purl(used.Path, used.Version)}}
	} else {
		p.ExternalRefs = []ExternalRef{{"PACKAGE-MANAGER", "purl", purl(d.Path, d.Version)}}
	}
	if sum, ok := strings.CutPrefix(used.Sum, "h1:"); ok {
		// go.sum's h1: hash is a SHA-256 of the module's file list, in base64.
		if b, err := base64.StdEncoding.DecodeString(sum); err == nil {
			p.Checksums = []Checksum{{Algorithm: "SHA256", Value: hex.EncodeToString(b)}}
		}
	}
	return p
}

// url keeps the characters of s a URL path may hold as is.
func url(s string) string { return idUnsafe.ReplaceAllString(s, "-") }
