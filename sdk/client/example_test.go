package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/client/clienttest"
)

// startExampleEngine stands in for an engine at http://localhost:6420 with the admin token
// "my-admin-token": 250 runners in two pools, two envoys, the default namespace.
func startExampleEngine() (endpoint string, stop func()) {
	srv := httptest.NewServer(clienttest.NewEngine("my-admin-token", 250))
	return srv.URL, srv.Close
}

func Example() {
	endpoint, stop := startExampleEngine()
	defer stop()
	ctx := context.Background()

	c, err := client.New(endpoint, client.WithToken("my-admin-token"), client.WithNamespace("default"))
	if err != nil {
		log.Fatal(err)
	}

	// Every running runner of pool-a, 100 per request: All follows the cursors.
	free := 0
	n := 0
	for r, err := range c.Runners().All(ctx, client.RunnerListOptions{Name: "pool-a"}) {
		if err != nil {
			log.Fatal(err)
		}
		n++
		free += int(r.RemainingSlots)
	}
	fmt.Println("pool-a:", n, "runners,", free, "free slots")

	// Or one page at a time: pass page.Next as the Cursor of the next call.
	page, err := c.Envoys().List(ctx, client.EnvoyListOptions{Limit: 10})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range page.Items {
		fmt.Println("envoy", e.EnvoyKey, "in", e.PoolName)
	}

	// Errors from the engine are *APIError, with its group and code.
	_, err = c.Namespaces().Create(ctx, "default", "Default")
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.Status, apiErr.Group+"."+apiErr.Code, "retryable:", apiErr.Retryable())
	}
	// Output:
	// pool-a: 83 runners, 496 free slots
	// envoy envoy-1 in pool-a
	// envoy envoy-2 in pool-b
	// 409 namespace.name_not_unique retryable: false
}
