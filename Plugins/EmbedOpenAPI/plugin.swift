import Foundation
import PackagePlugin

/// Embeds `docs/openapi.json` — the one source of the OpenAPI document — into the Gateway at
/// build time, as generated Swift in the build directory (nothing generated is checked in).
@main
struct EmbedOpenAPI: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let input = context.package.directoryURL.appending(path: "docs/openapi.json")
        let output = context.pluginWorkDirectoryURL.appending(path: "OpenAPIDocument.swift")
        return [
            .buildCommand(
                displayName: "Embedding docs/openapi.json", executable: try context.tool(named: "EmbedResource").url,
                arguments: [input.path(), output.path(), "OpenAPIDocument"], inputFiles: [input], outputFiles: [output])
        ]
    }
}
