// Package config is the engine's one configuration schema: topology, auth, listeners, store.
// Load merges JSON/YAML files, BERTH__section__key environment variables and flag overrides, then validates, naming each bad key.
package config
