{{/* The image reference: repository:tag, the tag defaulting to the chart's appVersion. */}}
{{- define "kubenode.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Labels of every object; `name` is added per workload. */}}
{{- define "kubenode.labels" -}}
app.kubernetes.io/part-of: kubenode
{{- end -}}

{{- define "kubenode.reconciler.name" -}}kubenode-conntrack-reconciler{{- end -}}
{{- define "kubenode.controller.name" -}}kubenode-servicecidr-controller{{- end -}}

{{/* The port of a host:port address. */}}
{{- define "kubenode.port" -}}
{{ regexReplaceAll "^.*:" . "" }}
{{- end -}}

{{/*
A container's command running the image's entry point under V8 flags (space-separated). They go on
node's command line: NODE_OPTIONS refuses most V8 flags (--optimize-for-size, --max-opt), and node
then does not start.
*/}}
{{- define "kubenode.nodeCommand" -}}
command:
  - node
  {{- range splitList " " . }}
  {{- if . }}
  - {{ . | quote }}
  {{- end }}
  {{- end }}
  - /opt/kubenode/node_modules/kubenode/dist/cli/main.js
{{- end -}}
