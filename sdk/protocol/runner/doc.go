// Package runner is the Rivet runner protocol (v5–v7, BARE over WebSocket): one Go type per
// message, EncodeToServer/DecodeToServer and EncodeToClient/DecodeToClient per protocol version.
package runner
