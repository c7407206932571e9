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
