// Package multinode tests several engine nodes of one datacenter sharing a PostgreSQL store
// and a NATS server (started in-process): runners spread over the nodes through a
// health-checking TCP balancer, gateway traffic entering every node, rolling restarts,
// a killed node, and the graceful drain's ownership releases. The PostgreSQL tests need
// BERTH_TEST_POSTGRES_URL (`source .ci/postgres.sh`).
package multinode
