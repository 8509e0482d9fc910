{{/* Names. */}}
{{- define "aerostream.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "aerostream.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains (include "aerostream.name" .) .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "aerostream.name" .) | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels: the selector labels never change, so they carry no version. */}}
{{- define "aerostream.selectorLabels" -}}
app.kubernetes.io/name: {{ include "aerostream.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "aerostream.labels" -}}
{{ include "aerostream.selectorLabels" . }}
app.kubernetes.io/part-of: aerostream
{{- if not .root.Values.plain }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "aerostream.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Every controller's client address, comma-separated. */}}
{{- define "aerostream.controllers" -}}
{{- $full := include "aerostream.fullname" . -}}
{{- $addrs := list -}}
{{- range $i := until (int .Values.controller.replicas) -}}
{{- $addrs = append $addrs (printf "%s-controller-%d.%s-controller.%s.svc:8001" $full $i $full $.Release.Namespace) -}}
{{- end -}}
{{- join "," $addrs -}}
{{- end -}}

{{/* The security protocol prefix of the Kafka and native listeners. */}}
{{- define "aerostream.kafkaProtocol" -}}
{{- if and .Values.tls.enabled .Values.sasl.enabled -}}SASL_SSL://
{{- else if .Values.tls.enabled -}}SSL://
{{- else if .Values.sasl.enabled -}}SASL_PLAINTEXT://
{{- end -}}
{{- end -}}

{{- define "aerostream.tlsSecret" -}}
{{- .Values.tls.existingSecret | default (printf "%s-tls" (include "aerostream.fullname" .)) -}}
{{- end -}}

{{- define "aerostream.bucketSecret" -}}
{{- .Values.tiering.existingSecret | default (printf "%s-bucket" (include "aerostream.fullname" .)) -}}
{{- end -}}

{{- define "aerostream.saslSecret" -}}
{{- .Values.sasl.existingSecret | default (printf "%s-sasl" (include "aerostream.fullname" .)) -}}
{{- end -}}

{{/* Whether the bucket credentials come from a Secret at all. */}}
{{- define "aerostream.bucketCredentials" -}}
{{- $t := .Values.tiering -}}
{{- if and $t.enabled (or $t.existingSecret (and (eq $t.provider "s3") $t.s3.accessKeyId) (and (eq $t.provider "gcs") $t.gcs.serviceAccountJson) (and (eq $t.provider "azure") $t.azure.accessKey)) -}}true{{- end -}}
{{- end -}}

{{/* Whether the controllers require the cluster secret: security is on
(sasl.enabled, which carries sasl.authorizer), so port 8001 must not take
calls from whoever reaches it. */}}
{{- define "aerostream.clusterSecretOn" -}}
{{- if .Values.sasl.enabled -}}true{{- end -}}
{{- end -}}

{{- define "aerostream.clusterSecret" -}}
{{- .Values.controller.clusterSecret.existingSecret | default (printf "%s-cluster" (include "aerostream.fullname" .)) -}}
{{- end -}}

{{/* Checks that fail the render with a reason rather than start pods that cannot work. */}}
{{- define "aerostream.validate" -}}
{{- $t := .Values.tiering -}}
{{- if $t.enabled -}}
{{- if not (has $t.provider (list "s3" "gcs" "azure")) -}}
{{- fail (printf "tiering.provider %q: want s3, gcs or azure (a cluster's stores share one bucket)" $t.provider) -}}
{{- end -}}
{{- if and (eq $t.provider "s3") (not $t.s3.bucket) -}}{{- fail "tiering.s3.bucket is empty" -}}{{- end -}}
{{- if and (eq $t.provider "gcs") (not $t.gcs.bucket) -}}{{- fail "tiering.gcs.bucket is empty" -}}{{- end -}}
{{- if and (eq $t.provider "azure") (or (not $t.azure.containerName) (not $t.azure.accountName)) -}}{{- fail "tiering.azure.containerName and tiering.azure.accountName must be set" -}}{{- end -}}
{{- if and (eq $t.provider "s3") (not $t.existingSecret) (ne (empty $t.s3.accessKeyId) (empty $t.s3.secretAccessKey)) -}}{{- fail "tiering.s3.accessKeyId and tiering.s3.secretAccessKey go together" -}}{{- end -}}
{{- end -}}
{{- if and .Values.tls.enabled (not .Values.tls.existingSecret) (or (not .Values.tls.certificate) (not .Values.tls.key)) -}}
{{- fail "tls.enabled needs tls.existingSecret, or tls.certificate and tls.key (PEM)" -}}
{{- end -}}
{{- if and .Values.sasl.enabled (not .Values.sasl.existingSecret) (not .Values.sasl.password) -}}
{{- fail "sasl.enabled needs sasl.existingSecret (key \"password\") or sasl.password for sasl.bootstrapUser" -}}
{{- end -}}
{{- if and .Values.iceberg.enabled (eq .Values.iceberg.catalog "rest") (not .Values.iceberg.restUri) -}}
{{- fail "iceberg.catalog rest needs iceberg.restUri" -}}
{{- end -}}
{{- range $section, $_ := .Values.config -}}
{{- if has $section (list "listeners" "tiered_storage" "tls" "auth" "iceberg") -}}
{{- fail (printf "config.%s: the chart writes [%s] itself; set its keys through the chart's values or extraEnv (AEROSTREAM_* variables)" $section $section) -}}
{{- end -}}
{{- end -}}
{{- if lt (int .Values.controller.replicas) 1 -}}{{- fail "controller.replicas must be at least 1" -}}{{- end -}}
{{- end -}}

{{/* Pod-level settings shared by every role. */}}
{{- define "aerostream.podCommon" -}}
serviceAccountName: {{ include "aerostream.fullname" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- end -}}

{{/* Environment every role shares: the pod's identity and the secrets. */}}
{{- define "aerostream.env" -}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: POD_IP
  valueFrom: {fieldRef: {fieldPath: status.podIP}}
- name: AEROSTREAM_CONFIG
  value: /etc/aerostream/aerostream.toml
{{- if include "aerostream.bucketCredentials" . }}
{{- if eq .Values.tiering.provider "s3" }}
- name: AEROSTREAM_TIERED_STORAGE_S3_ACCESS_KEY_ID
  valueFrom: {secretKeyRef: {name: {{ include "aerostream.bucketSecret" . }}, key: access-key-id}}
- name: AEROSTREAM_TIERED_STORAGE_S3_SECRET_ACCESS_KEY
  valueFrom: {secretKeyRef: {name: {{ include "aerostream.bucketSecret" . }}, key: secret-access-key}}
{{- else if eq .Values.tiering.provider "azure" }}
- name: AEROSTREAM_TIERED_STORAGE_AZURE_ACCESS_KEY
  valueFrom: {secretKeyRef: {name: {{ include "aerostream.bucketSecret" . }}, key: access-key}}
{{- end }}
{{- end }}
{{- if .Values.sasl.enabled }}
- name: AEROSTREAM_AUTH_BOOTSTRAP_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ include "aerostream.saslSecret" . }}, key: password}}
{{- end }}
{{- if include "aerostream.clusterSecretOn" . }}
- name: AEROSTREAM_AUTH_CONTROLLER_SECRET_FILE
  value: /etc/aerostream/cluster/cluster-secret
{{- end }}
{{- if and .Values.iceberg.enabled .Values.iceberg.restCredentialSecret }}
- name: AEROSTREAM_ICEBERG_REST_CREDENTIAL
  valueFrom: {secretKeyRef: {name: {{ .Values.iceberg.restCredentialSecret }}, key: credential}}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes every role mounts: config, scripts, secrets, /tmp. */}}
{{- define "aerostream.volumes" -}}
- name: config
  configMap: {name: {{ include "aerostream.fullname" . }}}
- name: scripts
  configMap: {name: {{ include "aerostream.fullname" . }}-scripts, defaultMode: 0555}
- name: tmp
  emptyDir: {}
{{- if .Values.tls.enabled }}
- name: tls
  secret: {secretName: {{ include "aerostream.tlsSecret" . }}}
{{- end }}
{{- if and (include "aerostream.bucketCredentials" .) (eq .Values.tiering.provider "gcs") }}
- name: gcs
  secret: {secretName: {{ include "aerostream.bucketSecret" . }}, items: [{key: service-account.json, path: service-account.json}]}
{{- end }}
{{- if include "aerostream.clusterSecretOn" . }}
- name: cluster-secret
  secret: {secretName: {{ include "aerostream.clusterSecret" . }}, items: [{key: cluster-secret, path: cluster-secret}]}
{{- end }}
{{- end -}}

{{- define "aerostream.volumeMounts" -}}
- {name: config, mountPath: /etc/aerostream/aerostream.toml, subPath: aerostream.toml, readOnly: true}
- {name: scripts, mountPath: /etc/aerostream/scripts, readOnly: true}
- {name: tmp, mountPath: /tmp}
{{- if .Values.tls.enabled }}
- {name: tls, mountPath: /etc/aerostream/tls, readOnly: true}
{{- end }}
{{- if and (include "aerostream.bucketCredentials" .) (eq .Values.tiering.provider "gcs") }}
- {name: gcs, mountPath: /etc/aerostream/gcs, readOnly: true}
{{- end }}
{{- if include "aerostream.clusterSecretOn" . }}
- {name: cluster-secret, mountPath: /etc/aerostream/cluster, readOnly: true}
{{- end }}
{{- end -}}

{{- define "aerostream.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
