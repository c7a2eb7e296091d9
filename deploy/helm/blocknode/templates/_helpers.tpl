{{/* Labels that select the plugin's pods. Fixed (no release name): a CSI driver is one per cluster. */}}
{{- define "blocknode.selectorLabels" -}}
app.kubernetes.io/name: blocknode
app.kubernetes.io/component: node-plugin
{{- end }}

{{- define "blocknode.labels" -}}
{{ include "blocknode.selectorLabels" . }}
{{ include "blocknode.releaseLabels" . }}
{{- end }}

{{/* The controller side's pods (controller.yaml). */}}
{{- define "blocknode.controllerSelectorLabels" -}}
app.kubernetes.io/name: blocknode
app.kubernetes.io/component: controller
{{- end }}

{{- define "blocknode.controllerLabels" -}}
{{ include "blocknode.controllerSelectorLabels" . }}
{{ include "blocknode.releaseLabels" . }}
{{- end }}

{{- define "blocknode.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* <kubelet root>/plugins/<driver>: the plugin's socket directory on the host. */}}
{{- define "blocknode.pluginDir" -}}
{{ trimSuffix "/" .Values.kubeletRoot }}/plugins/{{ .Values.driverName }}
{{- end }}

{{/* repository:tag, and @digest when the values give one (a released chart does): the tag for people, the
     digest for the runtime, which then pulls exactly the released image. */}}
{{- define "blocknode.image" -}}
{{ .repository }}:{{ .tag }}{{ with get . "digest" }}@{{ . }}{{ end }}
{{- end }}

{{/* host:port for --metrics-address; an IPv6 host goes in brackets. */}}
{{- define "blocknode.metricsAddress" -}}
{{- $host := .Values.metrics.host -}}
{{- if contains ":" $host }}{{ $host = printf "[%s]" $host }}{{ end -}}
{{ $host }}:{{ .Values.metrics.port | int }}
{{- end }}
