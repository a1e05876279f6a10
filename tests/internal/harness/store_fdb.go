//go:build fdb

package harness

import _ "github.com/berthhq/berth/pkg/udb/driver/fdb" // fdb://, for BERTH_TEST_DB_URL
