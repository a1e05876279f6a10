// Package client is a typed Go client for berth's public API: runners, envoys, namespaces, datacenters, runner configs, actors and their KV, and the engine's health, with bearer auth, *APIError errors and pagers that follow cursors.
// It wraps the low-level client in package api, generated from api-public/openapi.yaml, and imports nothing from the engine.
//
//	c, err := client.New("http://localhost:6420",
//		client.WithToken(os.Getenv("BERTH_TOKEN")), // the engine's admin token, if it has one
//		client.WithNamespace("default"))
//	if err != nil {
//		log.Fatal(err)
//	}
//
//	// Every runner of the pool, 100 per request: All follows the cursors.
//	for r, err := range c.Runners().All(ctx, client.RunnerListOptions{Name: "my-pool"}) {
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println(r.RunnerId, r.RemainingSlots, "of", r.TotalSlots, "slots free")
//	}
//
//	// Or one page at a time: pass page.Next as the Cursor of the next call.
//	page, err := c.Envoys().List(ctx, client.EnvoyListOptions{Limit: 10})
//
//	// Errors from the engine are *APIError, with its group and code.
//	_, err = c.Namespaces().Create(ctx, "default", "Default")
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Code == "name_not_unique" {
//		// already there
//	}
package client
