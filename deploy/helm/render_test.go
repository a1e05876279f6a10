package helm

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart, relative to this package.
const chartDir = "berth"

// release is the release name and namespace every rendering uses. With the chart's name in
// it, the objects are named "berth", "berth-peer"...
const release = "berth"

// rendered is one rendering of the chart: the merged values and every object, decoded.
type rendered struct {
	name   string         // the values file, for messages
	values map[string]any // the chart's values merged with the file's
	docs   []document     // in the order of the template files, then within each
	// The decoded objects by kind.
	statefulSets    []*appsv1.StatefulSet
	deployments     []*appsv1.Deployment
	services        []*corev1.Service
	configMaps      []*corev1.ConfigMap
	secrets         []*corev1.Secret
	serviceAccounts []*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	hpas            []*autoscalingv2.HorizontalPodAutoscaler
	serviceMonitors []*monitoringv1.ServiceMonitor
}

// document is one YAML document of the output, with the template it came from.
type document struct {
	source string
	yaml   []byte
}

// renderFile renders the chart with a values file ("" for the chart's values.yaml alone).
func renderFile(t *testing.T, file string) *rendered {
	t.Helper()
	vals := map[string]any{}
	if file != "" {
		v, err := chartutil.ReadValuesFile(file)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		vals = v.AsMap()
	}
	r, err := render(vals)
	if err != nil {
		t.Fatalf("render %s: %v", nameOf(file), err)
	}
	r.name = nameOf(file)
	if err := r.decode(); err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return r
}

func nameOf(file string) string {
	if file == "" {
		return "values.yaml"
	}
	return file
}

// render renders the chart as `helm template` would, with strict templates (a missing value
// is an error), and splits the output into documents.
func render(vals map[string]any) (*rendered, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	opts := chartutil.ReleaseOptions{Name: release, Namespace: release, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValues(ch, vals, opts, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Engine{Strict: true}.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	r := &rendered{values: rv["Values"].(chartutil.Values).AsMap()}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, helpers
		}
		for _, doc := range docSeparator.Split(out[name], -1) {
			if isBlank(doc) {
				continue
			}
			r.docs = append(r.docs, document{source: name, yaml: []byte(strings.TrimLeft(doc, "\n"))})
		}
	}
	return r, nil
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// isBlank reports whether a document holds nothing but blank lines and comments.
func isBlank(doc string) bool {
	for line := range strings.SplitSeq(doc, "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
			return false
		}
	}
	return true
}

// decode decodes every document strictly into its Kubernetes type: an unknown field, a
// duplicate key or a value of the wrong type is an error, as is a kind the chart is not
// meant to produce or an apiVersion other than the one the type belongs to.
func (r *rendered) decode() error {
	for _, d := range r.docs {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(d.yaml, &head); err != nil {
			return fmt.Errorf("%s: %w", d.source, err)
		}
		var target any
		var want string
		switch head.Kind {
		case "StatefulSet":
			o := &appsv1.StatefulSet{}
			r.statefulSets, target, want = append(r.statefulSets, o), o, "apps/v1"
		case "Deployment":
			o := &appsv1.Deployment{}
			r.deployments, target, want = append(r.deployments, o), o, "apps/v1"
		case "Service":
			o := &corev1.Service{}
			r.services, target, want = append(r.services, o), o, "v1"
		case "ConfigMap":
			o := &corev1.ConfigMap{}
			r.configMaps, target, want = append(r.configMaps, o), o, "v1"
		case "Secret":
			o := &corev1.Secret{}
			r.secrets, target, want = append(r.secrets, o), o, "v1"
		case "ServiceAccount":
			o := &corev1.ServiceAccount{}
			r.serviceAccounts, target, want = append(r.serviceAccounts, o), o, "v1"
		case "PodDisruptionBudget":
			o := &policyv1.PodDisruptionBudget{}
			r.pdbs, target, want = append(r.pdbs, o), o, "policy/v1"
		case "HorizontalPodAutoscaler":
			o := &autoscalingv2.HorizontalPodAutoscaler{}
			r.hpas, target, want = append(r.hpas, o), o, "autoscaling/v2"
		case "ServiceMonitor":
			o := &monitoringv1.ServiceMonitor{}
			r.serviceMonitors, target, want = append(r.serviceMonitors, o), o, "monitoring.coreos.com/v1"
		default:
			return fmt.Errorf("%s: unexpected kind %q", d.source, head.Kind)
		}
		if head.APIVersion != want {
			return fmt.Errorf("%s: %s has apiVersion %q, want %q", d.source, head.Kind, head.APIVersion, want)
		}
		if err := yaml.UnmarshalStrict(d.yaml, target); err != nil {
			return fmt.Errorf("%s: %s: %w", d.source, head.Kind, err)
		}
	}
	return nil
}

// valuesFiles are every values file the chart is checked with: its defaults, the files of
// ci/, and those the plain manifests are rendered from.
func valuesFiles(t *testing.T) []string {
	t.Helper()
	ci, err := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := filepath.Glob(filepath.Join(manifestsDir, "*", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ci) < 4 || len(plain) < 2 {
		t.Fatalf("found %d ci values files and %d plain-manifest values files; the chart's layout changed?", len(ci), len(plain))
	}
	return append(append([]string{""}, ci...), plain...)
}

// value returns the merged value at a dotted path, or nil.
func (r *rendered) value(path string) any {
	var v any = r.values
	for part := range strings.SplitSeq(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[part]
	}
	return v
}

func (r *rendered) secret(name string) *corev1.Secret {
	for _, s := range r.secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// userSecrets are the Secrets the values say the user creates: every existingSecret value.
func (r *rendered) userSecrets() []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, x := range m {
			if s, ok := x.(string); ok && k == "existingSecret" && s != "" {
				out = append(out, s)
			}
			walk(x)
		}
	}
	walk(r.values)
	return out
}

func TestRenderedYAMLHasNoDuplicateKeys(t *testing.T) {
	for _, file := range valuesFiles(t) {
		r := renderFile(t, file)
		for _, d := range r.docs {
			if _, err := yaml.YAMLToJSONStrict(d.yaml); err != nil {
				t.Errorf("%s: %s: %v", r.name, d.source, err)
			}
		}
	}
}

// TestRenderFailures checks that the chart refuses values that would deploy an engine that
// cannot work, naming what is wrong.
func TestRenderFailures(t *testing.T) {
	cases := []struct {
		name string
		vals string
		want string
	}{
		{"unknown mode", `mode: multi`, `value must be one of 'single', 'cluster'`},
		{"no token", `auth: {existingSecret: ""}`, `auth.existingSecret or auth.adminToken`},
		{"cluster without database", `{mode: cluster, nats: {url: "nats://n:4222"}}`, `database.url`},
		{"cluster without nats", `{mode: cluster, database: {url: "postgres://db/berth"}}`, `nats.url`},
		{"bundled postgres without password", `{mode: cluster, postgresql: {enabled: true}, natsServer: {enabled: true}}`, `postgresql.password`},
		{"autoscaling a single node", `autoscaling: {enabled: true}`, `autoscaling needs mode cluster`},
		{"grace period shorter than the drain", `shutdown: {drainMs: 30000, preStopSleepSeconds: 5, terminationGracePeriodSeconds: 35}`, `must be larger than`},
		{"liveness window shorter than the grace period", `probes: {liveness: {periodSeconds: 5, failureThreshold: 3}}`, `must cover the termination grace period`},
		{"a managed key in config", `config: {guard: {port: 7000}}`, `config.guard.port is set by the chart`},
		{"the drain in config", `config: {node: {shutdown_drain_ms: 1000}}`, `config.node.shutdown_drain_ms is set by the chart`},
		{"tokens file without a token", `auth: {existingSecret: "", allowAnonymous: true, tokensFile: {existingSecret: t}}`, `auth.tokensFile needs an admin token`},
		{"a misspelt value", `replicas: 3`, `additional properties 'replicas' not allowed`},
		{"a port out of range", `ports: {guard: 70000}`, `maximum`},
		{"client auth without a CA", `tls: {apiPeer: {existingSecret: p, clientAuth: true}}`, `needs tls.apiPeer.caKey`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var vals map[string]any
			if err := yaml.Unmarshal([]byte(c.vals), &vals); err != nil {
				t.Fatal(err)
			}
			_, err := render(vals)
			if err == nil {
				t.Fatalf("rendered; want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q; want it to contain %q", err, c.want)
			}
		})
	}
}

// TestPortsFollowValues checks the chart's values really reach the objects: a port
// changed in the values moves the container port, the probes' port (by name) and the
// configuration together.
func TestPortsFollowValues(t *testing.T) {
	var vals map[string]any
	if err := yaml.Unmarshal([]byte(`{ports: {guard: 7420, apiPeer: 7421, metrics: 7430}}`), &vals); err != nil {
		t.Fatal(err)
	}
	r, err := render(vals)
	if err != nil {
		t.Fatal(err)
	}
	r.name = "ports moved"
	if err := r.decode(); err != nil {
		t.Fatal(err)
	}
	cfg := checkEngine(t, r)
	if cfg.Guard.Port != 7420 || cfg.APIPeer.Port != 7421 || cfg.Metrics.Port != 7430 {
		t.Fatalf("ports in the configuration: %d %d %d; want 7420 7421 7430", cfg.Guard.Port, cfg.APIPeer.Port, cfg.Metrics.Port)
	}
}

// TestNoGoValuesInOutput guards against a template printing a Go value
// instead of YAML (map[...] or <nil>), which strict decoding may accept inside a string.
func TestNoGoValuesInOutput(t *testing.T) {
	for _, file := range valuesFiles(t) {
		r := renderFile(t, file)
		for _, d := range r.docs {
			for _, bad := range [][]byte{[]byte("map["), []byte("<nil>"), []byte("%!")} {
				if bytes.Contains(d.yaml, bad) {
					t.Errorf("%s: %s contains %q:\n%s", r.name, d.source, bad, d.yaml)
				}
			}
		}
	}
}

func TestValuesFilesDeployWhatTheySay(t *testing.T) {
	want := map[string]struct {
		mode                        string
		statefulSets, deployments   int
		hpa, serviceMonitor, secret bool
	}{
		"values.yaml":                       {mode: "single", statefulSets: 1},
		"berth/ci/single.yaml":              {mode: "single", statefulSets: 1, serviceMonitor: true, secret: true},
		"berth/ci/cluster.yaml":             {mode: "cluster", statefulSets: 2, deployments: 1, hpa: true, serviceMonitor: true, secret: true},
		"berth/ci/multi-dc.yaml":            {mode: "cluster", deployments: 1},
		"berth/ci/tls-tokens.yaml":          {mode: "single", statefulSets: 1},
		"../kubernetes/single/values.yaml":  {mode: "single", statefulSets: 1},
		"../kubernetes/cluster/values.yaml": {mode: "cluster", deployments: 1},
	}
	for _, file := range valuesFiles(t) {
		r := renderFile(t, file)
		w, ok := want[r.name]
		if !ok {
			t.Errorf("%s: a values file this test does not know; add it to the table", r.name)
			continue
		}
		if got := r.value("mode"); got != w.mode {
			t.Errorf("%s: mode %v, want %s", r.name, got, w.mode)
		}
		if len(r.statefulSets) != w.statefulSets || len(r.deployments) != w.deployments {
			t.Errorf("%s: %d StatefulSets and %d Deployments, want %d and %d", r.name, len(r.statefulSets), len(r.deployments), w.statefulSets, w.deployments)
		}
		if (len(r.hpas) > 0) != w.hpa || (len(r.serviceMonitors) > 0) != w.serviceMonitor || (len(r.secrets) > 0) != w.secret {
			t.Errorf("%s: %d HPAs, %d ServiceMonitors, %d Secrets; want HPA %v, ServiceMonitor %v, Secret %v",
				r.name, len(r.hpas), len(r.serviceMonitors), len(r.secrets), w.hpa, w.serviceMonitor, w.secret)
		}
	}
}
