package apihttp

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"
)

// Endpoints both APIs serve the same way.

// Protocol versions the engine speaks, reported by /metadata.
const (
	EnvoyProtocolVersion  = 8
	RunnerProtocolVersion = 7
)

// BuildInfo describes the running binary.
type BuildInfo struct {
	Version        string // release or git describe, "dev" when unset
	GitSHA         string
	BuildTimestamp string // RFC 3339
	GoVersion      string
}

// HealthResponse is the body of GET /health.
type HealthResponse struct {
	Status  string `json:"status"`  // "ok"
	Runtime string `json:"runtime"` // "engine"
	Version string `json:"version"`
}

// MetadataResponse is the body of GET /metadata.
type MetadataResponse struct {
	Runtime               string `json:"runtime"`
	Version               string `json:"version"`
	GitSHA                string `json:"git_sha"`
	BuildTimestamp        string `json:"build_timestamp"`
	GoVersion             string `json:"go_version"`
	EnvoyProtocolVersion  int    `json:"envoy_protocol_version"`
	RunnerProtocolVersion int    `json:"runner_protocol_version"`
}

// Pagination is the pagination object of every list response; Cursor is null on an empty page
// (see page.Cursor).
type Pagination struct {
	Cursor *string `json:"cursor"`
}

// DatacenterInfo is one entry of GET /datacenters.
type DatacenterInfo struct {
	Label uint16 `json:"label"`
	Name  string `json:"name"`
	URL   string `json:"url"` // the public URL
}

// DatacentersResponse is the body of GET /datacenters.
type DatacentersResponse struct {
	Datacenters []DatacenterInfo `json:"datacenters"`
	Pagination  Pagination       `json:"pagination"`
}

// DatacentersQuery is the query of GET /datacenters: rivetkit 2.3 names its namespace, which
// Rivet accepts and ignores (every namespace sees every datacenter).
type DatacentersQuery struct {
	Namespace string `query:"namespace"`
}

// NoQuery is the query of an endpoint that takes no parameters: binding it rejects any.
type NoQuery struct{}

// HealthHandler serves GET /health.
func HealthHandler(b BuildInfo) echo.HandlerFunc {
	resp := HealthResponse{Status: "ok", Runtime: "engine", Version: b.Version}
	return func(c echo.Context) error { return c.JSON(http.StatusOK, resp) }
}

// MetadataHandler serves GET /metadata.
func MetadataHandler(b BuildInfo) echo.HandlerFunc {
	resp := MetadataResponse{
		Runtime: "engine", Version: b.Version, GitSHA: b.GitSHA, BuildTimestamp: b.BuildTimestamp,
		GoVersion: b.GoVersion, EnvoyProtocolVersion: EnvoyProtocolVersion, RunnerProtocolVersion: RunnerProtocolVersion,
	}
	return func(c echo.Context) error { return c.JSON(http.StatusOK, resp) }
}

// DatacentersHandler serves GET /datacenters from the topology, ordered by label.
func DatacentersHandler(t Topology) echo.HandlerFunc {
	resp := DatacentersResponse{Datacenters: make([]DatacenterInfo, 0, len(t.Datacenters))}
	for _, dc := range t.Datacenters {
		resp.Datacenters = append(resp.Datacenters, DatacenterInfo{Label: dc.Label, Name: dc.Name, URL: dc.PublicURL})
	}
	slices.SortFunc(resp.Datacenters, func(a, b DatacenterInfo) int { return cmp.Compare(a.Label, b.Label) })
	return func(c echo.Context) error {
		if err := BindQuery(c, &DatacentersQuery{}); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, resp)
	}
}
