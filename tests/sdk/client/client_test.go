package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/client/clienttest"
)

const token = "s3cret"

// start serves f on a loopback port, checking every exchange against api-public/openapi.yaml.
func start(t testing.TB, f *clienttest.Engine) *httptest.Server {
	return httptest.NewServer(openapitest.Handler(t, f))
}

func newClient(t *testing.T, f *clienttest.Engine, opts ...client.Option) *client.Client {
	t.Helper()
	srv := start(t, f)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, append([]client.Option{client.WithToken(token)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// queries returns the queries f saw on path, each with its parameters in name order (the
// values of a repeated parameter keep their order).
func queries(t *testing.T, f *clienttest.Engine, path string) []string {
	t.Helper()
	var out []string
	for _, raw := range f.Queries(path) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, q.Encode())
	}
	return out
}

func TestRunnersAllFollowsCursors(t *testing.T) {
	f := clienttest.NewEngine(token, 250)
	c := newClient(t, f)
	ctx := context.Background()

	got, err := client.Collect(c.Runners().All(ctx, client.RunnerListOptions{IncludeStopped: true, Limit: 100}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 250 {
		t.Fatalf("got %d runners, want 250", len(got))
	}
	for i, r := range got {
		if r.RunnerId != clienttest.RunnerID(i) {
			t.Fatalf("runner %d is %s, want %s: the pager lost or repeated an item", i, r.RunnerId, clienttest.RunnerID(i))
		}
	}
	if !slices.Equal(f.PageSizes(), []int{100, 100, 50}) {
		t.Errorf("pages %v, want [100 100 50]", f.PageSizes())
	}
	for _, a := range f.Auths() {
		if a != "Bearer "+token {
			t.Errorf("Authorization %q, want the bearer token", a)
		}
	}
	wantQueries := []string{
		"include_stopped=true&limit=100&namespace=default",
		"cursor=100&include_stopped=true&limit=100&namespace=default",
		"cursor=200&include_stopped=true&limit=100&namespace=default",
	}
	if got := queries(t, f, "/runners"); !slices.Equal(got, wantQueries) {
		t.Errorf("queries:\n got %q\nwant %q", got, wantQueries)
	}
}

func TestRunnersListFilters(t *testing.T) {
	f := clienttest.NewEngine(token, 20)
	c := newClient(t, f)
	ctx := context.Background()

	// Repeated runner_id parameters, a pool name; stopped runners (every third) left out.
	p, err := c.Runners().List(ctx, client.RunnerListOptions{Name: "pool-b", RunnerIDs: []string{clienttest.RunnerID(1), clienttest.RunnerID(3), clienttest.RunnerID(4)}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range p.Items {
		ids = append(ids, r.RunnerId)
	}
	if !slices.Equal(ids, []string{clienttest.RunnerID(1)}) || p.Next != "" {
		t.Errorf("got %v next %q, want [%s] and no next page", ids, p.Next, clienttest.RunnerID(1))
	}
	wantQuery := "name=pool-b&namespace=default&runner_id=" + clienttest.RunnerID(1) + "&runner_id=" + clienttest.RunnerID(3) + "&runner_id=" + clienttest.RunnerID(4)
	if q := queries(t, f, "/runners")[0]; q != wantQuery {
		t.Errorf("query %q, want %q", q, wantQuery)
	}

	// One page at a time, by hand.
	first, err := c.Runners().List(ctx, client.RunnerListOptions{Limit: 5, IncludeStopped: true})
	if err != nil || len(first.Items) != 5 || first.Next == "" {
		t.Fatalf("first page: %d items, next %q, %v", len(first.Items), first.Next, err)
	}
	second, err := c.Runners().List(ctx, client.RunnerListOptions{Limit: 5, IncludeStopped: true, Cursor: first.Next})
	if err != nil || len(second.Items) != 5 || second.Items[0].RunnerId != clienttest.RunnerID(5) {
		t.Fatalf("second page: %+v, %v", second, err)
	}

	// Optional fields: absent in JSON is nil, present is set.
	if first.Items[0].StopTs == nil || first.Items[1].StopTs != nil || first.Items[0].DrainTs != nil {
		t.Errorf("optional timestamps: stop %v/%v drain %v", first.Items[0].StopTs, first.Items[1].StopTs, first.Items[0].DrainTs)
	}

	if _, err := c.Runners().List(ctx, client.RunnerListOptions{Limit: -1}); err == nil {
		t.Error("a negative limit was sent")
	}
}

func TestRunnerNames(t *testing.T) {
	f := clienttest.NewEngine(token, 4)
	c := newClient(t, f)
	ctx := context.Background()
	names, err := client.Collect(c.Runners().AllNames(ctx, client.NameListOptions{Limit: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, []string{"pool-a", "pool-b"}) {
		t.Errorf("names %v", names)
	}
	if q := queries(t, f, "/runners/names"); len(q) != 2 || q[1] != "cursor=pool-a&limit=1&namespace=default" {
		t.Errorf("queries %q", q)
	}
}

func TestEnvoys(t *testing.T) {
	f := clienttest.NewEngine(token, 0)
	c := newClient(t, f)
	ctx := context.Background()
	p, err := c.Envoys().List(ctx, client.EnvoyListOptions{EnvoyKeys: []string{"envoy-1", "envoy-2"}, Pool: "pool-b"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 1 || p.Items[0].EnvoyKey != "envoy-2" || p.Items[0].Slots != 5 {
		t.Errorf("envoys %+v", p.Items)
	}
	if q := queries(t, f, "/envoys")[0]; q != "envoy_key=envoy-1&envoy_key=envoy-2&name=pool-b&namespace=default" {
		t.Errorf("query %q", q)
	}
	all, err := client.Collect(c.Envoys().All(ctx, client.EnvoyListOptions{Limit: 1}))
	if err != nil || len(all) != 2 {
		t.Errorf("all envoys: %d, %v", len(all), err)
	}
}

func TestNamespaces(t *testing.T) {
	f := clienttest.NewEngine(token, 0)
	c := newClient(t, f)
	ctx := context.Background()

	n, err := c.Namespaces().Create(ctx, "games", "Games")
	if err != nil || n.Name != "games" || n.DisplayName != "Games" || len(n.NamespaceId) != 30 {
		t.Fatalf("create: %+v, %v", n, err)
	}
	_, err = c.Namespaces().Create(ctx, "games", "Games")
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || apiErr.Group != "namespace" || apiErr.Code != "name_not_unique" ||
		apiErr.Metadata["name"] != "games" || apiErr.RayID != "ray-1" {
		t.Fatalf("second create: %#v", err)
	}
	if !errors.Is(err, &client.APIError{Group: "namespace", Code: "name_not_unique"}) || errors.Is(err, &client.APIError{Group: "namespace", Code: "not_found"}) {
		t.Error("errors.Is must match on group and code")
	}
	if apiErr.Retryable() {
		t.Error("a conflict is not retryable")
	}

	all, err := client.Collect(c.Namespaces().All(ctx, client.NamespaceListOptions{Limit: 1}))
	if err != nil || len(all) != 2 || all[1].Name != "games" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	p, err := c.Namespaces().List(ctx, client.NamespaceListOptions{NamespaceIDs: []string{clienttest.NamespaceID}, Name: "default"})
	if err != nil || len(p.Items) != 1 || p.Items[0].Name != "default" {
		t.Fatalf("list by id: %+v, %v", p, err)
	}
	if q := queries(t, f, "/namespaces"); q[len(q)-1] != "name=default&namespace_id="+clienttest.NamespaceID {
		t.Errorf("query %q", q[len(q)-1])
	}
	// Namespaces are global: the client's namespace is not sent.
	if _, err := c.InNamespace("games").Namespaces().List(ctx, client.NamespaceListOptions{}); err != nil {
		t.Error(err)
	}
}

func TestDatacenters(t *testing.T) {
	c := newClient(t, clienttest.NewEngine(token, 0))
	dcs, err := c.Datacenters().List(context.Background())
	if err != nil || len(dcs) != 2 || dcs[1].Name != "eu" || dcs[1].Label != 2 {
		t.Fatalf("%+v, %v", dcs, err)
	}
}

func TestRunnerConfigs(t *testing.T) {
	f := clienttest.NewEngine(token, 0)
	c := newClient(t, f)
	ctx := context.Background()

	changed, err := c.RunnerConfigs().Upsert(ctx, "pool-s", map[string]client.RunnerConfig{
		"default": {Serverless: &client.RunnerConfigServerless{Url: "https://app.example/api", RequestLifespan: 300, Headers: &map[string]string{"x-k": "v"}}},
		"eu":      {Normal: &client.RunnerConfigNormal{}, Metadata: map[string]any{"team": "games"}},
	})
	if err != nil || !changed {
		t.Fatalf("upsert: %v, %v", changed, err)
	}
	var sent map[string]map[string]map[string]any
	if err := json.Unmarshal([]byte(f.Upserts()[0]), &sent); err != nil {
		t.Fatal(err)
	}
	if _, ok := sent["datacenters"]["eu"]["normal"]; !ok || sent["datacenters"]["default"]["serverless"] == nil {
		t.Errorf("upsert body %s", f.Upserts()[0])
	}

	all, err := c.RunnerConfigs().List(ctx, client.RunnerConfigListOptions{})
	if err != nil || len(all) != 2 || all["pool-s"]["default"].Serverless.Url != "https://app.example/api" || all["pool-a"]["default"].Normal == nil {
		t.Fatalf("list: %+v, %v", all, err)
	}
	only, err := c.RunnerConfigs().List(ctx, client.RunnerConfigListOptions{Variant: client.VariantServerless, RunnerNames: []string{"pool-s", "pool-a"}})
	if err != nil || len(only) != 1 || len(only["pool-s"]) != 1 {
		t.Fatalf("list serverless: %+v, %v", only, err)
	}
	if q := queries(t, f, "/runner-configs")[1]; q != "namespace=default&runner_name=pool-s&runner_name=pool-a&variant=serverless" {
		t.Errorf("query %q", q)
	}

	if err := c.RunnerConfigs().Delete(ctx, "pool-s"); err != nil {
		t.Fatal(err)
	}
	err = c.RunnerConfigs().Delete(ctx, "pool-s")
	if !errors.Is(err, &client.APIError{Group: "runner_config", Code: "not_found"}) {
		t.Errorf("second delete: %v", err)
	}
}

func TestErrors(t *testing.T) {
	f := clienttest.NewEngine(token, 3)
	srv := start(t, f)
	defer srv.Close()
	ctx := context.Background()

	noToken, _ := client.New(srv.URL)
	_, err := noToken.Runners().List(ctx, client.RunnerListOptions{})
	if !errors.Is(err, &client.APIError{Group: "api", Code: "unauthorized"}) || err.(*client.APIError).Status != 401 {
		t.Errorf("without a token: %v", err)
	}
	wrong, _ := client.New(srv.URL, client.WithToken("nope"))
	_, err = wrong.Envoys().List(ctx, client.EnvoyListOptions{})
	if !errors.Is(err, &client.APIError{Group: "api", Code: "forbidden"}) {
		t.Errorf("with a wrong token: %v", err)
	}

	c, _ := client.New(srv.URL, client.WithToken(token), client.WithNamespace("missing"))
	_, err = c.Runners().List(ctx, client.RunnerListOptions{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || apiErr.Message != "The namespace does not exist." {
		t.Fatalf("unknown namespace: %#v", err)
	}
	if got := apiErr.Error(); got != "berth: 404 namespace.not_found: The namespace does not exist." {
		t.Errorf("Error() = %q", got)
	}
}

func TestDecodeError(t *testing.T) {
	c := newClient(t, clienttest.NewEngine(token, 0), client.WithNamespace("missing"))
	resp, err := c.Raw().RunnerConfigsList(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The raw client sends what it is given: no namespace here, so a 400.
	if err := client.DecodeError(resp); !errors.Is(err, &client.APIError{Group: "api", Code: "bad_request"}) {
		t.Errorf("%v", err)
	}
}
