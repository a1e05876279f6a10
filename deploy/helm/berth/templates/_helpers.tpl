{{/* Names and labels. */}}
{{- define "berth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: engine
{{- end }}

{{- define "berth.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: berth
{{- end }}

{{- define "berth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "berth.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret and key of the admin token; empty when there is none. */}}
{{- define "berth.adminTokenSecret" -}}
{{- if .Values.auth.adminToken }}
{{- printf "%s-auth" (include "berth.fullname" .) }}
{{- else }}
{{- .Values.auth.existingSecret }}
{{- end }}
{{- end }}

{{/* The Secret and key of database.url in cluster mode. */}}
{{- define "berth.databaseSecret" -}}
{{- if or .Values.database.url .Values.postgresql.enabled }}
{{- printf "%s-database" (include "berth.fullname" .) }}
{{- else }}
{{- .Values.database.existingSecret }}
{{- end }}
{{- end }}

{{- define "berth.natsURL" -}}
{{- if .Values.nats.url }}
{{- .Values.nats.url }}
{{- else if .Values.natsServer.enabled }}
{{- printf "nats://%s-nats:4222" (include "berth.fullname" .) }}
{{- end }}
{{- end }}

{{/* The termination grace period: given, or preStop + drain + 5 s. */}}
{{- define "berth.gracePeriod" -}}
{{- $min := add .Values.shutdown.preStopSleepSeconds (div (add .Values.shutdown.drainMs 999) 1000) }}
{{- if .Values.shutdown.terminationGracePeriodSeconds }}
{{- if le (int .Values.shutdown.terminationGracePeriodSeconds) (int $min) }}
{{- fail (printf "shutdown.terminationGracePeriodSeconds (%v) must be larger than shutdown.preStopSleepSeconds + shutdown.drainMs/1000 (%v), or the drain is killed" .Values.shutdown.terminationGracePeriodSeconds $min) }}
{{- end }}
{{- .Values.shutdown.terminationGracePeriodSeconds }}
{{- else }}
{{- add $min 5 }}
{{- end }}
{{- end }}

{{/* Checks of the values that no template would otherwise catch. */}}
{{- define "berth.validate" -}}
{{- if not (has .Values.mode (list "single" "cluster")) }}
{{- fail (printf "mode is %q: want single or cluster" .Values.mode) }}
{{- end }}
{{- if and (not (include "berth.adminTokenSecret" .)) (not .Values.auth.allowAnonymous) }}
{{- fail "auth: give auth.existingSecret or auth.adminToken (or set auth.allowAnonymous): without a token berth listens on loopback only, out of reach of Services and probes" }}
{{- end }}
{{- if and .Values.auth.tokensFile.existingSecret (not (include "berth.adminTokenSecret" .)) }}
{{- fail "auth.tokensFile needs an admin token (auth.existingSecret or auth.adminToken)" }}
{{- end }}
{{- if and .Values.tls.apiPeer.clientAuth (not .Values.tls.apiPeer.caKey) }}
{{- fail "tls.apiPeer.clientAuth needs tls.apiPeer.caKey" }}
{{- end }}
{{- if eq .Values.mode "cluster" }}
{{- if not (include "berth.databaseSecret" .) }}
{{- fail "mode cluster: give database.url, database.existingSecret or postgresql.enabled (the nodes share one PostgreSQL database)" }}
{{- end }}
{{- if not (include "berth.natsURL" .) }}
{{- fail "mode cluster: give nats.url or natsServer.enabled (the nodes share one NATS server)" }}
{{- end }}
{{- if and .Values.postgresql.enabled (not .Values.postgresql.password) }}
{{- fail "postgresql.enabled needs postgresql.password" }}
{{- end }}
{{- else }}
{{- if .Values.autoscaling.enabled }}
{{- fail "autoscaling needs mode cluster: a single node on the embedded store cannot be scaled" }}
{{- end }}
{{- end }}
{{- $window := mul .Values.probes.liveness.periodSeconds .Values.probes.liveness.failureThreshold }}
{{- if lt (int $window) (int (include "berth.gracePeriod" .)) }}
{{- fail (printf "probes.liveness: periodSeconds x failureThreshold (%v s) must cover the termination grace period (%s s)" $window (include "berth.gracePeriod" .)) }}
{{- end }}
{{- $managed := dict "guard" (list "port" "host" "tls") "api_peer" (list "port" "host" "tls") "metrics" (list "port" "host") "auth" (list "admin_token" "allow_anonymous" "tokens_file") "database" (list "url") "pubsub" (list "url") "node" (list "shutdown_drain_ms" "address" "id") }}
{{- range $section, $keys := $managed }}
{{- $s := get ($.Values.config | default dict) $section }}
{{- if kindIs "map" $s }}
{{- range $keys }}
{{- if hasKey $s . }}
{{- fail (printf "config.%s.%s is set by the chart; use its own values (ports, auth, tls, database, nats, shutdown) instead" $section .) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/* The engine's configuration file, berth.yaml. Secrets come from the environment. */}}
{{- define "berth.config" -}}
{{- $c := deepCopy (.Values.config | default dict) }}
{{- $guard := get $c "guard" | default dict }}
{{- $_ := set $guard "port" .Values.ports.guard }}
{{- if .Values.tls.guard.existingSecret }}
{{- $_ := set $guard "tls" (dict "cert_file" "/etc/berth/tls/guard/tls.crt" "key_file" "/etc/berth/tls/guard/tls.key") }}
{{- end }}
{{- $_ := set $c "guard" $guard }}
{{- $peer := get $c "api_peer" | default dict }}
{{- $_ := set $peer "port" .Values.ports.apiPeer }}
{{- if .Values.tls.apiPeer.existingSecret }}
{{- $tls := dict "cert_file" "/etc/berth/tls/peer/tls.crt" "key_file" "/etc/berth/tls/peer/tls.key" }}
{{- if .Values.tls.apiPeer.caKey }}
{{- $_ := set $tls "ca_file" (printf "/etc/berth/tls/peer/%s" .Values.tls.apiPeer.caKey) }}
{{- $_ := set $tls "client_auth" .Values.tls.apiPeer.clientAuth }}
{{- end }}
{{- $_ := set $peer "tls" $tls }}
{{- end }}
{{- $_ := set $c "api_peer" $peer }}
{{- $metrics := get $c "metrics" | default dict }}
{{- $_ := set $metrics "port" .Values.ports.metrics }}
{{- $_ := set $c "metrics" $metrics }}
{{- $auth := dict }}
{{- if .Values.auth.tokensFile.existingSecret }}
{{- $_ := set $auth "tokens_file" (printf "/etc/berth/tokens/%s" .Values.auth.tokensFile.key) }}
{{- end }}
{{- if and .Values.auth.allowAnonymous (not (include "berth.adminTokenSecret" .)) }}
{{- $_ := set $auth "allow_anonymous" true }}
{{- end }}
{{- if $auth }}
{{- $_ := set $c "auth" $auth }}
{{- end }}
{{- if eq .Values.mode "single" }}
{{- $_ := set $c "database" (dict "url" "file:///data/berth") }}
{{- else }}
{{- $_ := set $c "pubsub" (dict "url" (include "berth.natsURL" .)) }}
{{- end }}
{{- $node := get $c "node" | default dict }}
{{- $_ := set $node "shutdown_drain_ms" .Values.shutdown.drainMs }}
{{- $_ := set $c "node" $node }}
{{- toYaml $c }}
{{- end }}

{{- define "berth.scheme" -}}
{{- if .Values.tls.guard.existingSecret }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/* The pod template of the engine, shared by the StatefulSet and the Deployment. */}}
{{- define "berth.podTemplate" -}}
metadata:
  labels:
    {{- include "berth.selectorLabels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    checksum/config: {{ include "berth.config" . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  serviceAccountName: {{ include "berth.serviceAccountName" . }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  terminationGracePeriodSeconds: {{ include "berth.gracePeriod" . }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: berth
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["start", "--config", "/etc/berth/config/berth.yaml"]
      env:
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: POD_IP
          valueFrom:
            fieldRef:
              fieldPath: status.podIP
        - name: BERTH__node__id
          value: $(POD_NAME)
        {{- if eq .Values.mode "cluster" }}
        - name: BERTH__node__address
          value: {{ if .Values.tls.apiPeer.existingSecret }}https{{ else }}http{{ end }}://$(POD_IP):{{ .Values.ports.apiPeer }}
        - name: BERTH__database__url
          valueFrom:
            secretKeyRef:
              name: {{ include "berth.databaseSecret" . }}
              key: {{ .Values.database.urlKey }}
        {{- end }}
        {{- with include "berth.adminTokenSecret" . }}
        - name: BERTH__auth__admin_token
          valueFrom:
            secretKeyRef:
              name: {{ . }}
              key: {{ $.Values.auth.adminTokenKey }}
        {{- end }}
        {{- with .Values.extraEnv }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      ports:
        - name: guard
          containerPort: {{ .Values.ports.guard }}
          protocol: TCP
        - name: api-peer
          containerPort: {{ .Values.ports.apiPeer }}
          protocol: TCP
        - name: metrics
          containerPort: {{ .Values.ports.metrics }}
          protocol: TCP
      readinessProbe:
        httpGet:
          path: /health/ready
          port: guard
          scheme: {{ include "berth.scheme" . }}
        periodSeconds: {{ .Values.probes.readiness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.readiness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.readiness.failureThreshold }}
      livenessProbe:
        httpGet:
          path: /health
          port: guard
          scheme: {{ include "berth.scheme" . }}
        periodSeconds: {{ .Values.probes.liveness.periodSeconds }}
        timeoutSeconds: {{ .Values.probes.liveness.timeoutSeconds }}
        failureThreshold: {{ .Values.probes.liveness.failureThreshold }}
      lifecycle:
        preStop:
          exec:
            command: ["/bin/sleep", "{{ .Values.shutdown.preStopSleepSeconds }}"]
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/berth/config
          readOnly: true
        - name: data
          mountPath: /data
        - name: tmp
          mountPath: /tmp
        {{- if .Values.auth.tokensFile.existingSecret }}
        - name: tokens
          mountPath: /etc/berth/tokens
          readOnly: true
        {{- end }}
        {{- if .Values.tls.guard.existingSecret }}
        - name: tls-guard
          mountPath: /etc/berth/tls/guard
          readOnly: true
        {{- end }}
        {{- if .Values.tls.apiPeer.existingSecret }}
        - name: tls-peer
          mountPath: /etc/berth/tls/peer
          readOnly: true
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "berth.fullname" . }}
    - name: tmp
      emptyDir: {}
    {{- if or (eq .Values.mode "cluster") (not .Values.persistence.enabled) }}
    - name: data
      emptyDir: {}
    {{- end }}
    {{- if .Values.auth.tokensFile.existingSecret }}
    - name: tokens
      secret:
        secretName: {{ .Values.auth.tokensFile.existingSecret }}
        items:
          - key: {{ .Values.auth.tokensFile.key }}
            path: {{ .Values.auth.tokensFile.key }}
    {{- end }}
    {{- if .Values.tls.guard.existingSecret }}
    - name: tls-guard
      secret:
        secretName: {{ .Values.tls.guard.existingSecret }}
    {{- end }}
    {{- if .Values.tls.apiPeer.existingSecret }}
    - name: tls-peer
      secret:
        secretName: {{ .Values.tls.apiPeer.existingSecret }}
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}
