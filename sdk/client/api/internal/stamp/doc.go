// Command stamp writes spec_sha256.go, which records the SHA-256 of the OpenAPI document the client in package api was generated from.
// go generate runs it after oapi-codegen, so that a test can tell when the generated client is older than api-public/openapi.yaml.
package main
