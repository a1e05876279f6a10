package api

// Regenerate after editing api-public/openapi.yaml: cd sdk && go generate ./client/api
// The second step records the spec's hash, which TestGeneratedFromCurrentSpec (tests/sdk/client)
// compares.

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config cfg.yaml ../../../api-public/openapi.yaml
//go:generate go run ./internal/stamp -spec ../../../api-public/openapi.yaml -out spec_sha256.go
