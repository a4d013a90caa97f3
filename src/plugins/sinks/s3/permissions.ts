/**
 * The IAM action behind each S3 request Rivet sends, and what it buys beyond the two Rivet needs
 * (s3:PutObject, s3:GetBucketLocation): named in the hint of an AccessDenied, so a notice that a step was skipped
 * says which permission would have run it. docs/destinations/s3.md has the same table.
 */
const OPTIONAL: Readonly<Record<string, { readonly action: string; readonly buys: string }>> = {
  GetObject: { action: "s3:GetObject", buys: "reading objects back (the check that manifest.json is still this run's, `rivet validate`)" },
  HeadObject: { action: "s3:GetObject", buys: "confirming an upload whose completion response was lost" },
  ListObjectsV2: { action: "s3:ListBucket", buys: "listing the destination (files a resumed run's interrupted attempt left, `rivet validate`)" },
  ListMultipartUploads: {
    action: "s3:ListBucketMultipartUploads",
    buys: "finding multipart uploads left open by a lost response or a killed run, so they can be aborted"
  },
  AbortMultipartUpload: { action: "s3:AbortMultipartUpload", buys: "aborting multipart uploads that were not completed (otherwise stored and billed until a lifecycle rule removes them)" },
  DeleteObject: { action: "s3:DeleteObject", buys: "removing `rivet doctor`'s probe object" }
}

export const REQUIRED_HINT = "Check IAM policy. Rivet needs s3:PutObject and s3:GetBucketLocation."

/** The hint of an AccessDenied on `operation`: the permission missing and what it buys, or the two Rivet needs. */
export const accessDeniedHint = (operation: string): string => {
  const optional = OPTIONAL[operation]
  if (optional === undefined) return REQUIRED_HINT
  return `The credentials lack ${optional.action}, which buys ${optional.buys}. Rivet runs without it (it needs only s3:PutObject and s3:GetBucketLocation); grant it to have that step done.`
}
