// Package runnerconfig holds the runner-config operations (upsert, delete, get, list by variant and name) and the API model:
// the request JSON with the Rivet engine's defaults and checks, and the response JSON.
package runnerconfig
